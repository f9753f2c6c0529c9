"""The look of each screen, pinned by pytest-textual-snapshot (120x40, fixed
clock, deterministic fake data). Regenerate with `pytest tests/tui --snapshot-update`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from app.tui.app import ControlRoomApp
from tests.tui.tui_helpers import loaded, settled, wait_until

SIZE = (120, 40)
Snap = Callable[..., bool]


async def _detail(pilot: Pilot[Any]) -> None:
    await loaded(pilot)
    await pilot.press("down", "d")  # 3fa2c1d0, below the job waiting for an answer
    screen = pilot.app.screen
    await wait_until(pilot, lambda: getattr(screen, "detail", None) is not None)
    tail = screen.query_one("#detail-tail")
    await wait_until(pilot, lambda: tail.line_count >= 8)  # type: ignore[attr-defined]
    await settled(pilot)


def after(*keys: str) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await loaded(pilot)
        events = pilot.app.query_one("#events")
        await wait_until(pilot, lambda: 0 < events.max_scroll_y == events.scroll_y, "the log's end")
        await settled(pilot)
        await pilot.press(*keys)
        await settled(pilot)

    return run_before


def test_main_screen(snap_compare: Snap, make_app: Callable[[], ControlRoomApp]) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=after())


def test_job_detail(snap_compare: Snap, make_app: Callable[[], ControlRoomApp]) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_detail)


def test_help(snap_compare: Snap, make_app: Callable[[], ControlRoomApp]) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=after("question_mark"))


def test_cancel_confirm(snap_compare: Snap, make_app: Callable[[], ControlRoomApp]) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=after("c"))


async def _history_not_built(pilot: Pilot[Any]) -> None:
    await loaded(pilot)
    await pilot.press("h")
    screen = pilot.app.screen
    await wait_until(pilot, lambda: getattr(screen, "load_count", 0) > 0)
    await settled(pilot)


def test_history_not_built(
    snap_compare: Snap, make_app: Callable[[], ControlRoomApp], state_dir: Path
) -> None:
    """Before any build (an empty ORCHESTRATE_HOME) the History screen says how to build."""
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_history_not_built)


def test_attach_hint(snap_compare: Snap, make_app: Callable[[], ControlRoomApp]) -> None:
    """The first enter: the way back (ctrl+q) before the terminal is handed to tmux."""
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=after("enter"))


async def _talk(pilot: Pilot[Any]) -> None:
    await after("down", "i", *"also update the changelog")(pilot)
    # the cursor shown, not blinking: a blink could land on either side of the picture
    pilot.app.screen.query_one(Input).cursor_blink = False
    await settled(pilot)


def test_talk_box(snap_compare: Snap, make_app: Callable[[], ControlRoomApp]) -> None:
    """i on the working job below the waiting one: the prompt box, a message typed."""
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_talk)
