"""`orchestrate answer --job ID yes|no|always`: answer the question a job's agent waits on
(the path itself is app/approvals/)."""

from __future__ import annotations

import click

from app.approvals.errors import UnrecognisedDialog
from app.approvals.question import parse_answer
from app.control import Orchestrator
from app.settings import Settings
from registry.vocabulary import Answer

CHOICES = [*(str(answer) for answer in Answer), *(answer[0] for answer in Answer)]
"""yes, no, always, y, n, a: click lists them in this order."""


@click.command()
@click.option("--job", "job_id", required=True, metavar="ID", help="The job asking permission.")
@click.argument("reply", type=click.Choice(CHOICES, case_sensitive=False))
@click.pass_obj
def answer(settings: Settings, job_id: str, reply: str) -> None:
    """Answer the job's agent: its hook's decision where it takes one, else its own keys,
    typed only while its question is on screen; confirmed by the agent moving on."""
    try:
        answered = Orchestrator(settings).answer(job_id, parse_answer(reply))
    except UnrecognisedDialog as error:  # nothing pressed: a person answers it
        raise UnrecognisedDialog(
            f"{error}; answer it yourself: orchestrate attach --job {job_id}"
        ) from None
    click.echo(f"job {job_id}: answered {answered.answer} ({answered.how})")
