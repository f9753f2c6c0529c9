"""`orchestrate demo`: simulated agents in tmux panes, so the control room comes alive."""

from __future__ import annotations

import click

from app.control import MAX_DEMO_AGENTS, Orchestrator
from app.control.demo_fleet import start_demo
from app.settings import Settings


@click.command()
@click.option("--agents", default=3, show_default=True, type=click.IntRange(1, MAX_DEMO_AGENTS))
@click.option("--seed", default=0, show_default=True, type=int, help="Repeatable behaviour.")
@click.option("--delay", type=click.FloatRange(0, 10), hidden=True, help="Seconds per step.")
@click.option("--steps", type=click.IntRange(1, 50), hidden=True, help="Steps per agent.")
@click.pass_obj
def demo(
    settings: Settings, agents: int, seed: int, delay: float | None, steps: int | None
) -> None:
    """Start N demo agents (one asks permission, one fails, the others complete)."""
    orchestrator = Orchestrator(settings)
    jobs = start_demo(orchestrator, agents, seed=seed, delay=delay, steps=steps)
    for job in jobs:
        click.echo(f"{job.job_id}  {job.agent_session}")
    socket = orchestrator.driver.socket_name
    click.echo(f"watch:  orchestrate job list   |   tmux -L {socket} attach", err=True)
    click.echo("answer: orchestrate answer --job ID yes  (the one asking permission)", err=True)
