"""Waiting helpers for the live control-room tests (deadlines, never fixed sleeps)."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot

from app.tui.app import ControlRoomApp
from app.tui.widgets.jobs_table import JobsTable

DEADLINE_S = 20.0


async def wait_until(pilot: Pilot[object], predicate: Callable[[], object], what: str) -> None:
    """Let the app run until `predicate()` holds; fail with `what` after the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, (
            f"gave up waiting for {what}; notices: {_notices(pilot)}"
        )
        await pilot.pause(0.05)


def notices(app: ControlRoomApp) -> list[str]:
    return [notification.message for notification in app._notifications]


async def wait_notice(pilot: Pilot[object], app: ControlRoomApp, text: str) -> str:
    """Wait for a notification containing `text`; returns it."""
    await wait_until(pilot, lambda: any(text in n for n in notices(app)), f"notice {text!r}")
    return next(n for n in notices(app) if text in n)


def jobs_table(app: ControlRoomApp) -> JobsTable:
    return app.main.query_one("#jobs", JobsTable)


def status_of(app: ControlRoomApp, job_id: str) -> str | None:
    job = jobs_table(app).jobs.get(job_id)
    return job.status if job else None


async def select_job(pilot: Pilot[object], app: ControlRoomApp, job_id: str) -> None:
    """Put the jobs-table cursor on `job_id` (waiting for its row first)."""
    table = jobs_table(app)
    await wait_until(pilot, lambda: job_id in table.rows, f"row {job_id}")
    table.focus()
    table.move_cursor(row=table.get_row_index(job_id))
    await pilot.pause()
    assert table.selected_job_id == job_id


def _notices(pilot: Pilot[object]) -> list[str]:
    return [n.message for n in pilot.app._notifications]
