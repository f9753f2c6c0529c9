"""`orchestrate watch`: open the control room TUI (Textual is imported only here)."""

from __future__ import annotations

import click

from app.orchestration import MAX_DEMO_AGENTS
from app.settings import Settings


@click.command()
@click.option(
    "--demo", is_flag=True, help="Also start demo agents in tmux, as real jobs in this registry."
)
@click.option(
    "--agents",
    type=click.IntRange(1, MAX_DEMO_AGENTS),
    default=3,
    show_default=True,
    help="How many demo agents (with --demo).",
)
@click.pass_obj
def watch(settings: Settings, demo: bool, agents: int) -> None:
    """Open the control room: live jobs, sessions, events and actions."""
    from app.tui.app import ControlRoomApp
    from app.tui.registry_source import open_source

    source = open_source(settings)
    app = ControlRoomApp(source, demo_agents=agents if demo else 0)
    app.run()
    if app.demo_job_ids and not app.demo_stopped:  # it ended some other way than quit
        source.stop_demo(app.demo_job_ids)
