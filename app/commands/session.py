"""`orchestrate session create/list/stop/resume/watch`: tmux agent sessions (seed 000 §5.1)."""

from __future__ import annotations

import sys

import click

from app.commands.json_option import ALWAYS_JSON_OPTION
from app.commands.workdir import WORKDIR
from app.control import Orchestrator
from app.control.launch import split_command
from app.settings import Settings
from app.terminal.output import dumps
from app.tmux.errors import TmuxNotInstalled
from registry.sessions import Session


@click.group()
def session() -> None:
    """Create, list, show, stop, resume and watch agent sessions (tmux sessions by label)."""


@session.command()
@click.argument("label")
@click.option("--agent", default="demo", show_default=True, metavar="NAME", help="Agent kind.")
@click.option("--agent-cmd", default="", metavar="CMD", help="Default command for its jobs.")
@click.option("--workdir", metavar="DIR", type=WORKDIR, help="Where the session's shells start.")
@click.pass_obj
def create(settings: Settings, label: str, agent: str, agent_cmd: str, workdir: str | None) -> None:
    """Record a running session and create its tmux session."""
    orchestrator = Orchestrator(settings)
    created = orchestrator.create_session(label, agent, agent_cmd=agent_cmd, workdir=workdir)
    click.echo(f"session {created.label}: {created.state}")
    click.echo(orchestrator.driver.attach_hint(label), err=True)


@session.command("list")
@click.option("--json", "as_json", is_flag=True, help="Records as a JSON array.")
@click.pass_obj
def list_sessions(settings: Settings, as_json: bool) -> None:
    """List sessions, reconciled with live tmux (vanished ones become terminated)."""
    orchestrator = Orchestrator(settings)
    try:
        sessions = orchestrator.list_sessions()
    except TmuxNotInstalled as error:  # the records are still worth showing
        click.echo(f"orchestrate: {error}; showing records without checking tmux", err=True)
        sessions = orchestrator.sessions.list()
    if as_json:
        sys.stdout.write(dumps([s.to_dict() for s in sessions], indent=2) + "\n")
        return
    click.echo(format_table(sessions))


@session.command()
@click.argument("label")
@ALWAYS_JSON_OPTION
@click.pass_obj
def get(settings: Settings, label: str) -> None:
    """Print one session record as JSON, reconciled with live tmux first as `list` is."""
    orchestrator = Orchestrator(settings)
    try:
        orchestrator.reconcile_sessions()
    except TmuxNotInstalled as error:  # the record is still worth showing
        click.echo(f"orchestrate: {error}; showing the record without checking tmux", err=True)
    sys.stdout.write(dumps(orchestrator.sessions.get(label).to_dict(), indent=2) + "\n")


def format_table(sessions: list[Session]) -> str:
    """The human `session list` table."""
    if not sessions:
        return "(no sessions)"
    rows = [("LABEL", "STATE", "AGENT", "TMUX SESSION", "UPDATED")]
    rows += [(s.label, s.state, s.agent, s.tmux_session, s.updated_at) for s in sessions]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


@session.command()
@click.argument("label")
@click.option(
    "--mode",
    type=click.Choice(["graceful", "soft", "hard"]),
    default="graceful",
    show_default=True,
    help="graceful: agents exit, resumable; soft: registry only; hard: kill tmux session.",
)
@click.pass_obj
def stop(settings: Settings, label: str, mode: str) -> None:
    """Stop a session: graceful -> stopped, soft -> archived, hard -> terminated."""
    stopped = Orchestrator(settings).stop_session(label, mode)
    click.echo(f"session {stopped.label}: {stopped.state}")


@session.command()
@click.argument("label")
@click.option(
    "--resume-cmd",
    metavar="CMD",
    help="Command that continues the agent (default per kind, e.g. `claude --continue`; "
    "or $ORCHESTRATE_RESUME_CMD_<KIND>).",
)
@click.pass_obj
def resume(settings: Settings, label: str, resume_cmd: str | None) -> None:
    """Resume a stopped or archived session."""
    argv = split_command(resume_cmd, "--resume-cmd") if resume_cmd else None
    resumed = Orchestrator(settings).resume_session(label, argv)
    click.echo(f"session {resumed.label}: {resumed.state}")


@session.command()
@click.argument("job_id", metavar="JOB")
@click.pass_obj
def watch(settings: Settings, job_id: str) -> None:
    """Open the control-room split for a job: pane log (70 %) over its events (30 %)."""
    orchestrator = Orchestrator(settings)
    orchestrator.control_room_split(job_id)
    click.echo(f"window w:{job_id} ready; {orchestrator.driver.attach_hint('control-room')}")
