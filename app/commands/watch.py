"""`orchestrate watch`: open the control room TUI (Textual is imported only here)."""

from __future__ import annotations

import click

from app.settings import Settings


@click.command()
@click.option("--demo", is_flag=True, help="Show demo agents instead of the local registry.")
@click.option(
    "--agents",
    type=click.IntRange(1, 16),
    default=4,
    show_default=True,
    help="How many demo agents (with --demo).",
)
@click.pass_obj
def watch(settings: Settings, demo: bool, agents: int) -> None:
    """Open the control room: live jobs, sessions, events and actions."""
    from app.tui.app import ControlRoomApp
    from app.tui.demo import LiveDemoSource
    from app.tui.source import open_source

    source = LiveDemoSource(agents) if demo else open_source(settings)
    ControlRoomApp(source).run()
