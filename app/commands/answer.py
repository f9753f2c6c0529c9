"""`orchestrate answer --job ID yes|no|always`: answer the question a job's agent waits on."""

from __future__ import annotations

import click

from app.orchestration import Orchestrator
from app.orchestration.answering import parse_answer
from app.settings import Settings
from registry.vocabulary import Answer


@click.command()
@click.option("--job", "job_id", required=True, metavar="ID", help="The job asking permission.")
@click.argument(
    "reply",
    type=click.Choice([*(answer.value for answer in Answer), "y", "n", "a"], case_sensitive=False),
)
@click.pass_obj
def answer(settings: Settings, job_id: str, reply: str) -> None:
    """Answer the job's agent: its hook's decision where it takes one, else its own keys,
    typed only while its question is on screen; confirmed by the agent moving on."""
    answered = Orchestrator(settings).answer(job_id, parse_answer(reply))
    click.echo(f"job {job_id}: answered {answered.answer} ({answered.how})")
