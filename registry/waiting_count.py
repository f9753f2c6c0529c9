"""How many jobs wait on a person: one SQL count and the status-line segment it
makes. Kept apart from registry/needs_you.py (which builds on it) with no imports
but sqlite3 and the vocabulary (about 1 ms), because tmux runs `orchestrate status
--tmux` every few seconds."""

from __future__ import annotations

import sqlite3
from typing import Final

from registry.vocabulary import Activity, EventType, JobStatus

WAITING_MARK: Final = "⚠"
WAITING_WHERE: Final = (
    f"status = '{JobStatus.RUNNING}' AND (activity = '{Activity.WAITING}' OR "
    f"(activity IS NULL AND last_event = '{EventType.PERMISSION_REQUIRED}'))"
)
"""SQL for `Job.waiting`: the agent's dialog is up, or (no activity observed yet)
its last published event asked for permission. tests/registry/test_needs_you.py
holds the two to the same answer."""
STUCK: Final = (Activity.BLOCKED, Activity.UNKNOWN, Activity.PAUSED)
"""Activities at which a person must look though nothing asks: orchestrate paused it
(its budget: `job resume` goes on), the agent stopped at a block, or its screen is one
no rule explains (``unknown``, which the observer calls only once the screen held
unexplained for UNKNOWN_AFTER_SEC with no other signal: most likely a dialog of a new
version, which nobody else will answer)."""
NEEDS_YOU_WHERE: Final = (
    f"({WAITING_WHERE}) OR (status = '{JobStatus.RUNNING}' AND activity IN "
    f"({', '.join(repr(str(activity)) for activity in STUCK)}))"
)
"""SQL for `Job.needs_person`: waiting, or stuck (nothing to answer, but a person must
look): what the needs-you count counts."""


def stuck(status: str, activity: str | None) -> bool:
    """Whether a job is STUCK (running, at one of those activities): the one test of it,
    for the registry's jobs and the control room's rows alike."""
    return status == JobStatus.RUNNING and activity in STUCK


def read_waiting_count(conn: sqlite3.Connection) -> int:
    """How many jobs wait on a person now (a dialog, or stopped at a block)."""
    row = conn.execute(f"SELECT COUNT(*) FROM jobs WHERE {NEEDS_YOU_WHERE}").fetchone()
    return int(row[0]) if row else 0


def tmux_segment(count: int, calm: str = "") -> str:
    """What `status --tmux` prints for tmux's status-right: "⚠ 2", else ``calm``."""
    return f"{WAITING_MARK} {count}" if count > 0 else calm
