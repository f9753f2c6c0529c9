"""The tmux split and the split pane-log tail: opened on a job, following the selection,
never reopened by a late answer."""

from __future__ import annotations

from collections.abc import Callable

from app.tui.app import ControlRoomApp
from app.tui.messages import LogPath
from tests.tui.fake_source import FakeSource
from tests.tui.tui_helpers import loaded, notices, select, wait_until

AppFactory = Callable[[], ControlRoomApp]


async def test_tmux_split_and_log_split(make_app: AppFactory, fake: FakeSource) -> None:
    """t asks the source for the tmux split; l opens and closes the log split."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("t")
        await wait_until(pilot, lambda: ("open_control_room_split", "3fa2c1d0") in fake.calls)
        # it lives on orchestrate's own tmux server: the notice says how to see it
        attach = "attach with: tmux -L orchestrate-test attach -t =control-room"
        await wait_until(pilot, lambda: any(attach in n for n in notices(app)))
        await pilot.press("l")
        await wait_until(pilot, lambda: app.main.log_open)
        tail = app.main.query_one("#log-tail")
        await wait_until(pilot, lambda: tail.line_count >= 8)  # type: ignore[attr-defined]
        await pilot.press("l")
        assert not app.main.log_open


async def test_the_log_split_follows_the_selected_job(make_app: AppFactory) -> None:
    """With the split log tail open, moving to another job tails that job's pane (it
    stayed on the job it was opened for)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("l")
        tail = app.main.query_one("#log-tail")
        await wait_until(pilot, lambda: tail.line_count >= 8)  # type: ignore[attr-defined]
        await pilot.press("down")  # 5f4e3d2c, which has no pane log yet
        await wait_until(pilot, lambda: tail.border_title == "pane log · 5f4e3d2c")
        await wait_until(pilot, lambda: "(no pane log for this job yet)" in tail.lines)  # type: ignore[attr-defined]
        assert app.main.log_open
        await pilot.press("up")
        await wait_until(pilot, lambda: tail.border_title == "pane log · 3fa2c1d0")
        await wait_until(pilot, lambda: tail.line_count >= 8)  # type: ignore[attr-defined]


async def test_a_log_path_found_too_late_does_not_reopen_the_split(make_app: AppFactory) -> None:
    """The pane log is looked up in a worker: a path that arrives after the split was
    closed, or for a job the cursor has left, is dropped (it reopened the split)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("l")
        await wait_until(pilot, lambda: app.main.log_open)
        await pilot.press("l")
        app.post_message(LogPath("3fa2c1d0", None))  # the late answer
        await pilot.pause()
        assert not app.main.log_open
        await pilot.press("l")
        await wait_until(pilot, lambda: app.main.log_open)
        app.post_message(LogPath("c4d5e6f7", None))  # for a job not wanted
        await pilot.pause()
        assert app.main.query_one("#log-tail").border_title == "pane log · 3fa2c1d0"
