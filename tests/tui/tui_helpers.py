"""Waiting and inspection helpers shared by the control room tests."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot

from app.tui.app import ControlRoomApp
from app.tui.widgets.jobs_table import JobsTable

# A bound for a wait, not a timed assertion: a passing test returns as soon as its
# state holds. At 10 s, a full run at load average ~25 (eight engineers on 2 cores)
# failed two waits (a fake build finishing, a pane tail drawn) that pass when alone.
WAIT_S = 30.0


async def wait_until(pilot: Pilot[object], predicate: Callable[[], object], what: str = "") -> None:
    """Let the app run until `predicate()` holds; fail after a generous deadline."""
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what or predicate}"
        await pilot.pause(0.02)


async def loaded(pilot: Pilot[object]) -> None:
    """Wait for the first delta to be drawn, then for the screen to settle."""
    app = pilot.app
    await wait_until(pilot, lambda: app.polls_applied > 0, "the first poll")  # type: ignore[attr-defined]
    await pilot.pause()


async def settled(pilot: Pilot[object], quiet_s: float = 0.05) -> None:
    """Wait until two screenshots `quiet_s` apart are the same, for a snapshot.

    `Pilot.pause()` judges the app idle by its process's CPU time, which knows
    nothing of work waiting on a refresh (the events log's scroll to its end, the
    footer's recompose after the bindings change): on a busy CI machine the main
    screen's snapshot was once taken before the screen had settled."""
    deadline = time.monotonic() + WAIT_S
    previous = ""
    while True:
        await pilot.pause(quiet_s)
        current = pilot.app.export_screenshot()
        if current == previous:
            return
        assert time.monotonic() < deadline, "the screen never stopped changing"
        previous = current


def notices(app: object) -> list[str]:
    return [notification.message for notification in app._notifications]  # type: ignore[attr-defined]


def select(app: ControlRoomApp, job_id: str) -> None:
    """Put the jobs table's cursor on ``job_id``'s row (rows move: live jobs first)."""
    table = app.main.query_one("#jobs", JobsTable)
    table.move_cursor(row=table.get_row_index(job_id))
