"""`orchestrate reconcile`: one liveness pass over agent panes (or `--watch` every 2 s)."""

from __future__ import annotations

import time

import click

from app.control import Orchestrator
from app.settings import Settings
from app.terminal.output import cell
from registry.activity import interruption

RESUME_HINT = "bring them back: orchestrate job resume --all-interrupted"


@click.command()
@click.option("--watch", is_flag=True, help="Repeat every --interval seconds until Ctrl-C.")
@click.option("--interval", default=2.0, show_default=True, type=click.FloatRange(0.2, 3600))
@click.pass_obj
def reconcile(settings: Settings, watch: bool, interval: float) -> None:
    """Sample agent panes, write heartbeats, fail jobs whose pane died, flag idle ones,
    and list the jobs interrupted by a lost pane (a reboot, tmux killed) with the reason."""
    orchestrator = Orchestrator(settings)
    last = ""
    while True:
        line = "\n".join([orchestrator.reconcile().summary(), *interrupted_lines(orchestrator)])
        if not watch:
            click.echo(line)
            return
        if line != last:  # a watch prints changes, not the same line every 2 s
            click.echo(f"{time.strftime('%H:%M:%S')} {line}")
            last = line
        time.sleep(interval)


def interrupted_lines(orchestrator: Orchestrator) -> list[str]:
    """One line per interrupted job, then how to bring them back; nothing when none is.
    Labels may come from an agent: printed through the CLI's terminal sink."""
    lines = [
        f"job {job.job_id} interrupted ({cell(job.agent)} in session {cell(job.agent_session)}): "
        + cell(interruption(job.activity, job.activity_data) or "")
        for job in orchestrator.interrupted_jobs()
    ]
    return [*lines, RESUME_HINT] if lines else []
