"""`orchestrate answer --job ID yes|no|always`: answer the question a job's agent waits on
(the path itself is app/approvals/)."""

from __future__ import annotations

import click

from app.approvals.errors import UnrecognisedDialog
from app.approvals.question import parse_answer
from app.control import Orchestrator
from app.fleet.options import WAIT_OPTION
from app.settings import Settings
from registry.fleet_commands import new_command
from registry.vocabulary import Answer, FleetVerb

CHOICES = [*(str(answer) for answer in Answer), *(answer[0] for answer in Answer)]
"""yes, no, always, y, n, a: click lists them in this order."""


@click.command()
@click.option("--job", "job_id", required=True, metavar="ID", help="The job asking permission.")
@click.argument("reply", type=click.Choice(CHOICES, case_sensitive=False))
@WAIT_OPTION
@click.pass_obj
def answer(settings: Settings, job_id: str, reply: str, wait_s: float | None) -> None:
    """Answer the job's agent: its hook's decision where it takes one, else its own keys,
    typed only while its question is on screen; confirmed by the agent moving on. A job
    on a fleet node is answered by its node, which confirms it."""
    from app.fleet import remote

    if (node := remote.placed_node(settings, job_id)) is not None:
        command = new_command(node, job_id, FleetVerb.ANSWER, reply=str(parse_answer(reply)))
        remote.say(remote.send(settings, command, wait_s), "answered")
        return
    try:
        answered = Orchestrator(settings).answer(job_id, parse_answer(reply))
    except UnrecognisedDialog as error:  # nothing pressed: a person answers it
        raise UnrecognisedDialog(
            f"{error}; answer it yourself: orchestrate attach --job {job_id}"
        ) from None
    click.echo(f"job {job_id}: answered {answered.answer} ({answered.how})")
