"""`orchestrate reconcile`: one liveness pass over agent panes (or `--watch` every 2 s)."""

from __future__ import annotations

import time

import click

from app.orchestration import Orchestrator
from app.settings import Settings


@click.command()
@click.option("--watch", is_flag=True, help="Repeat every --interval seconds until Ctrl-C.")
@click.option("--interval", default=2.0, show_default=True, type=click.FloatRange(0.2, 3600))
@click.pass_obj
def reconcile(settings: Settings, watch: bool, interval: float) -> None:
    """Sample agent panes, write heartbeats, fail jobs whose pane died, flag idle ones."""
    orchestrator = Orchestrator(settings)
    last = ""
    while True:
        line = orchestrator.reconcile().summary()
        if not watch:
            click.echo(line)
            return
        if line != last:  # a watch prints changes, not the same line every 2 s
            click.echo(f"{time.strftime('%H:%M:%S')} {line}")
            last = line
        time.sleep(interval)
