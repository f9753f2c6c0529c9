"""`orchestrate supervise`: observe running agents in the background (see supervisor.py)."""

from __future__ import annotations

import click

from app.control import Orchestrator
from app.settings import Settings, notify_cmd_from_env
from app.supervision.notify import background_watch
from app.supervision.supervisor import IDLE_EXIT_SEC, PASS_INTERVAL_SEC
from app.supervision.supervisor import supervise as run


@click.command()
@click.option(
    "--interval", default=PASS_INTERVAL_SEC, show_default=True, type=click.FloatRange(0.1, 60)
)
@click.option(
    "--idle-exit",
    default=IDLE_EXIT_SEC,
    show_default=True,
    type=click.FloatRange(0, 86_400),
    metavar="SECONDS",
    help="Exit once no job has run for this long.",
)
@click.pass_obj
def supervise(settings: Settings, interval: float, idle_exit: float) -> None:
    """Keep observing running agents (activity, done, interrupted) until none runs.
    Started by itself when an agent starts; one per state dir. With
    ORCHESTRATE_NOTIFY_CMD in its environment it also runs that command when a job
    starts waiting on a person or ends (once per change, shared with control rooms)."""
    orchestrator = Orchestrator(settings)

    def report(line: str) -> None:
        click.echo(line, err=True)

    watch = background_watch(orchestrator.registry, notify_cmd_from_env(), report)
    code = run(
        orchestrator,
        interval=interval,
        idle_exit_sec=idle_exit,
        report=report,
        after_pass=watch.check if watch is not None else None,
    )
    if watch is not None:
        watch.notifier.close()
    raise click.exceptions.Exit(code)
