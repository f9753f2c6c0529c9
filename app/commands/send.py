"""`orchestrate send --job ID TEXT` and `orchestrate attach --job ID`: talk to an agent,
or step into its pane (ctrl+q, or tmux's detach prefix d, brings you back)."""

from __future__ import annotations

import getpass
import os
import shlex
import sys

import click

from app.control import Orchestrator
from app.fleet.options import WAIT_OPTION
from app.settings import Settings
from registry.fleet_commands import new_command
from registry.vocabulary import FleetVerb


@click.command()
@click.option("--job", "job_id", required=True, metavar="ID", help="The job whose agent to tell.")
@click.argument("text", required=False)
@click.option("--file", "text_file", type=click.File("r", encoding="utf-8"), help="Read TEXT.")
@WAIT_OPTION
@click.pass_obj
def send(
    settings: Settings, job_id: str, text: str | None, text_file: object, wait_s: float | None
) -> None:
    """Send free text to the job's agent, as if typed and submitted (a bracketed paste,
    then Enter), and record it on the job as an `input` event. A job on a fleet node
    gets it from its node, which confirms it."""
    if (text is None) == (text_file is None):
        raise click.UsageError("give TEXT or --file FILE (one of them)")
    body = text if text is not None else text_file.read()  # type: ignore[attr-defined]
    from app.fleet import remote

    if (node := remote.placed_node(settings, job_id)) is not None:
        command = new_command(node, job_id, FleetVerb.SEND, text=body)
        remote.say(remote.send(settings, command, wait_s), "sent")
        return
    sent = Orchestrator(settings).send_input(job_id, body, by=f"{getpass.getuser()} (cli)")
    click.echo(f"job {job_id}: sent {sent} characters")


@click.command()
@click.option("--job", "job_id", required=True, metavar="ID", help="The job to step into.")
@click.option("--print", "print_only", is_flag=True, help="Print the tmux command instead.")
@click.pass_obj
def attach(settings: Settings, job_id: str, print_only: bool) -> None:
    """Step into the job's agent pane; ctrl+q (or tmux's detach, prefix then d) comes
    back. Inside your own tmux it nests (TMUX unset for it); inside orchestrate's own
    tmux server it switches the client."""
    argv = Orchestrator(settings).attach_argv(job_id)
    if print_only or not sys.stdin.isatty():
        click.echo(shlex.join(argv))
        return
    os.execvp(argv[0], argv)
