"""`orchestrate watch`: open the control room TUI (Textual is imported only here)."""

from __future__ import annotations

import os

import click

from app.control import MAX_DEMO_AGENTS
from app.settings import (
    BELL_ENV,
    NOTIFY_CMD_ENV,
    TITLE_ENV,
    Settings,
    notify_cmd_from_env,
    switch_from_env,
)


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
@click.option(
    "--bell/--no-bell",
    default=None,
    help=f"Ring the terminal bell when a job starts waiting on you (default: on; {BELL_ENV}).",
)
@click.option(
    "--title/--no-title",
    default=None,
    help=f"Set the terminal title to `orchestrate (N waiting)` (default: on; {TITLE_ENV}).",
)
@click.option(
    "--notify-cmd",
    metavar="CMD",
    default=None,
    help="Run CMD (words split as a shell would, run without one) with the job as JSON on "
    "stdin when a job starts waiting on you or ends; '' for none "
    f"(default: ${NOTIFY_CMD_ENV}).",
)
@click.pass_obj
def watch(
    settings: Settings,
    demo: bool,
    agents: int,
    bell: bool | None,
    title: bool | None,
    notify_cmd: str | None,
) -> None:
    """Open the control room: live jobs, sessions, events and actions."""
    from app.commands.policy import warn_if_broken

    warn_if_broken(settings.state_dir)
    from app.supervision.notify import NotifyCommand

    command = (
        NotifyCommand.parse(notify_cmd)
        if notify_cmd is not None
        else NotifyCommand.from_env(notify_cmd_from_env())
    )
    signals_bell = switch_from_env(BELL_ENV) if bell is None else bell
    signals_title = switch_from_env(TITLE_ENV) if title is None else title

    from app.tui.app import ControlRoomApp
    from app.tui.needs_you import SignalSettings
    from app.tui.registry_source import open_source

    source = open_source(settings)
    signals = SignalSettings(bell=signals_bell, title=signals_title, notify=command)
    app = ControlRoomApp(source, demo_agents=agents if demo else 0, signals=signals)
    app.use_policy(settings.state_dir, os.environ)
    app.run()
    if app.demo_job_ids and not app.demo_stopped:  # it ended some other way than quit
        source.stop_demo(app.demo_job_ids)
