"""Every control-room action against real SQLite state and demo agents in real tmux panes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from app.tui.screens.confirm import ConfirmScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.history import HistoryScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.new_job import NewJobScreen
from app.tui.screens.stop_session import StopSessionScreen
from registry.vocabulary import JobStatus
from tests.ci import require_module
from tests.tui.live.live_helpers import (
    jobs_table,
    notices,
    select_job,
    status_of,
    wait_notice,
    wait_until,
)

control = require_module("app.control")

SIZE = (120, 40)


def demo_cmd(*flags: str, steps: int = 3, delay: float = 0.05) -> list[str]:
    """The demo agent as a pane command: fast, and asking permission if told to."""
    argv = [
        sys.executable,
        "-m",
        "app.agents.demo_cli",
        "--steps",
        str(steps),
        "--delay",
        str(delay),
    ]
    return [*argv, *flags, "{prompt_file}"]


SLOW = demo_cmd(steps=50, delay=2.0)  # busy for minutes: long enough to act on


@pytest.fixture
def orch(state_dir: Path, tmux_socket: str) -> Iterator[Any]:
    orchestrator = control.Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    yield orchestrator


@pytest.fixture
def live_app(state_dir: Path, tmux_socket: str, orch: Any) -> Callable[..., ControlRoomApp]:
    def build(**kwargs: Any) -> ControlRoomApp:
        source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, orchestrator=orch)
        # No background reconcile here: it races with submit (see test_reconcile_*).
        options: dict[str, Any] = {"poll_interval_s": 0.05, "reconcile_interval_s": None}
        return ControlRoomApp(source, **(options | kwargs))

    return build


async def test_cancel_confirmed(orch: Any, live_app: Callable[..., ControlRoomApp]) -> None:
    """c then "Cancel job" cancels a running agent's job in the registry."""
    job = orch.submit("count to fifty", "demo", "alpha", agent_cmd=SLOW)
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await select_job(pilot, app, job.job_id)
        await pilot.press("c")
        assert isinstance(app.screen, ConfirmScreen)
        assert app.focused is not None and app.focused.id == "cancel"  # the default
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: status_of(app, job.job_id) == "cancelled", "cancelled")
    assert orch.registry.get(job.job_id).status == "cancelled"


async def test_cancel_not_confirmed(orch: Any, live_app: Callable[..., ControlRoomApp]) -> None:
    """enter on the default button, or esc, leaves the job as it was."""
    job = orch.submit("count to fifty", "demo", "alpha", agent_cmd=SLOW)
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await select_job(pilot, app, job.job_id)
        await pilot.press("c", "enter")
        await pilot.press("c", "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "main screen")
        assert orch.registry.get(job.job_id).status in (JobStatus.PENDING, JobStatus.RUNNING)
        # The mark that both answers were handled, rather than a look after a pause: a
        # confirmed cancel next succeeds, so nothing had cancelled the job before it.
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.click("#confirm")
        await wait_notice(pilot, app, f"Cancelled job {job.job_id}")
        assert not [n for n in notices(app) if "Could not cancel" in n]


async def test_resume_a_cancelled_job(orch: Any, live_app: Callable[..., ControlRoomApp]) -> None:
    """r on a cancelled job makes it a new attempt: pending again (and picked up)."""
    job = orch.submit("count to fifty", "demo", "alpha", agent_cmd=SLOW)
    orch.cancel(job.job_id)
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await select_job(pilot, app, job.job_id)
        await wait_until(pilot, lambda: status_of(app, job.job_id) == "cancelled", "cancelled")
        await pilot.press("r")
        await wait_until(
            pilot, lambda: status_of(app, job.job_id) in ("pending", "running"), "resumed"
        )
    assert any(change.transition == "resume" for change in orch.registry.history(job.job_id))


async def test_stop_session_hard(
    orch: Any, live_app: Callable[..., ControlRoomApp], tmux_socket: str
) -> None:
    """S, hard, Stop, confirm: the session is terminated and its tmux session killed."""
    job = orch.submit("count to fifty", "demo", "alpha", agent_cmd=SLOW)
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await select_job(pilot, app, job.job_id)
        await pilot.press("S")
        assert isinstance(app.screen, StopSessionScreen)
        await pilot.click("#mode-hard")
        await pilot.click("#stop")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirm")
        await pilot.click("#confirm")
        await wait_notice(pilot, app, "Stopped session alpha (hard)")
        sessions = app.main.query_one("#sessions")
        await wait_until(
            pilot,
            lambda: (
                "alpha" in sessions.rows  # type: ignore[attr-defined]
                and str(sessions.get_cell("alpha", "state")) == "terminated"  # type: ignore[attr-defined]
                and str(sessions.get_cell("alpha", "tmux")) == "gone"
            ),  # type: ignore[attr-defined]
            "alpha terminated, tmux gone",
        )
    assert orch.sessions.get("alpha").state == "terminated"


async def test_new_job_modal_starts_a_pane(
    orch: Any, live_app: Callable[..., ControlRoomApp], tmux_socket: str
) -> None:
    """n, a prompt, agent "demo", Submit: a real job whose demo agent runs to completion."""
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("plus")
        assert isinstance(app.screen, NewJobScreen)
        await pilot.press(*"say hello")
        app.screen.query_one("#agent", Input).value = "demo"
        app.screen.query_one("#session", Input).value = "beta"
        await pilot.click("#submit")
        notice = await wait_notice(pilot, app, "Submitted job ")
        job_id = notice.rsplit(" ", 1)[-1]
        await wait_until(pilot, lambda: job_id in jobs_table(app).rows, "the new row")
        await wait_until(pilot, lambda: status_of(app, job_id) == "completed", "completed")
    assert (Path(orch.settings.state_dir) / "logs" / job_id / "pane.log").exists()


async def test_permission_answered_yes_reaches_completed(
    orch: Any, live_app: Callable[..., ControlRoomApp]
) -> None:
    """A demo agent asks permission; y in the control room answers its pane; it completes."""
    job = orch.submit("ask first", "demo", "gamma", agent_cmd=demo_cmd("--ask-permission"))
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await select_job(pilot, app, job.job_id)
        table = jobs_table(app)
        await wait_until(
            pilot,
            lambda: (row := table.jobs.get(job.job_id)) is not None and row.waiting_permission,
            "the permission prompt",
        )
        await pilot.press("y")
        await wait_notice(pilot, app, f"Answered yes to {job.job_id}")
        await wait_until(pilot, lambda: status_of(app, job.job_id) == "completed", "completed")


async def test_filter_command_mode_and_help(
    orch: Any, live_app: Callable[..., ControlRoomApp]
) -> None:
    """/ narrows real rows, : runs commands by name, ? lists the keys."""
    first = orch.submit("first", "demo", "alpha", agent_cmd=SLOW)
    second = orch.submit("second", "other", "beta", agent_cmd=SLOW)
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        table = jobs_table(app)
        await wait_until(pilot, lambda: table.row_count == 2, "both rows")
        await pilot.press("slash", *"beta", "enter")
        await wait_until(pilot, lambda: table.row_count == 1, "filtered to beta")
        assert second.job_id in table.rows and first.job_id not in table.rows
        await pilot.press("escape")
        await wait_until(pilot, lambda: table.row_count == 2, "filter cleared")
        await pilot.press("colon", *"history", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        await pilot.press("escape", "colon", *"bogus", "enter")
        await wait_until(pilot, lambda: any("bogus" in n for n in notices(app)), "refusal")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_reconcile_runs_live_and_catches_a_dead_pane(
    orch: Any, live_app: Callable[..., ControlRoomApp]
) -> None:
    """The app reconciles in the background: an agent killed in its pane (C-c, exit 130)
    turns its job to error."""
    job = orch.submit("count to fifty", "demo", "delta", agent_cmd=SLOW)
    deadline = time.monotonic() + 20
    while orch.registry.get(job.job_id).last_event != "started":  # the pane is up
        assert time.monotonic() < deadline, "the demo agent never started"
        time.sleep(0.05)
    app = live_app(reconcile_interval_s=0.3)
    async with app.run_test(size=SIZE) as pilot:
        await select_job(pilot, app, job.job_id)
        pane_id = orch.pane_for_job(job.job_id)
        assert pane_id is not None
        orch.driver.send_key_names(pane_id, ["C-c"])
        await wait_until(pilot, lambda: status_of(app, job.job_id) == "error", "error")
        await wait_notice(pilot, app, f"job {job.job_id} → error")
