"""`orchestrate answer --job ID yes|no`: answer a job's permission prompt in its own pane."""

from __future__ import annotations

import click

from app.orchestration import Orchestrator
from app.settings import Settings


@click.command()
@click.option("--job", "job_id", required=True, metavar="ID", help="The job asking permission.")
@click.argument("reply", type=click.Choice(["yes", "no", "y", "n"], case_sensitive=False))
@click.pass_obj
def answer(settings: Settings, job_id: str, reply: str) -> None:
    """Type yes or no into the job's pane, only if it waits for permission; confirms receipt."""
    yes = reply.lower().startswith("y")
    Orchestrator(settings).answer(job_id, yes)
    click.echo(f"job {job_id}: answered {'yes' if yes else 'no'}")
