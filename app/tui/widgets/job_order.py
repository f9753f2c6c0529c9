"""The order of the jobs table: live jobs first by default, or by a column the person
picked (`s` then the column's letter, or a click on its header)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.tui.source import JobRow, row_order

# Most urgent first: what needs a person, then what runs, then what is over.
STATE_RANK = {
    state: rank
    for rank, state in enumerate(
        (
            *("waiting", "stalled", "interrupted", "idle", "working", "starting", "running"),
            *("exited", "pending", "error", "cancelled", "completed"),
        )
    )
}


@dataclass(frozen=True)
class SortColumn:
    """A column the table can be sorted by, and the letter that picks it after `s`."""

    key: str  # the table's column key
    letter: str
    label: str
    value: Callable[[JobRow], Any]


SORT_COLUMNS: tuple[SortColumn, ...] = (
    SortColumn("job_id", "j", "job", lambda job: job.job_id),
    SortColumn("status", "s", "status", lambda job: STATE_RANK.get(job.state, len(STATE_RANK))),
    SortColumn("agent", "a", "agent", lambda job: job.agent.lower()),
    SortColumn("session", "e", "session", lambda job: job.agent_session.lower()),
    SortColumn("age", "g", "age (youngest first)", lambda job: -job.created_at.timestamp()),
    SortColumn("missing", "m", "missing events", lambda job: -job.missing_events),
    SortColumn("last_event", "l", "last event", lambda job: (job.last_event or "").lower()),
    SortColumn("progress", "p", "progress", lambda job: job.progress_detail.lower()),
)
SORT_BY_KEY = {column.key: column for column in SORT_COLUMNS}
DEFAULT_ORDER = ""  # what SortScreen returns for "live jobs first", the default


@functools.total_ordering
@dataclass(frozen=True)
class Descending:
    """Wraps a sort key so that larger ones come first."""

    key: Any

    def __lt__(self, other: object) -> bool:
        return isinstance(other, Descending) and bool(other.key < self.key)


def order_key(job: JobRow, column: str, reverse: bool) -> Any:
    """Where `job` sits: by `column` (ties in the default order), else the default
    order (`row_order`: waiting, running, pending, then the finished, newest first)."""
    default = row_order(job)
    sort = SORT_BY_KEY.get(column)
    if sort is None:
        return default
    key = (sort.value(job), default)
    return Descending(key) if reverse else key
