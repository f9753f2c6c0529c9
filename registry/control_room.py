"""The control room's read model: the registry's reads for ``orchestrate watch``.

The control room polls the registry a few times a second, and each of its reads
must be one indexed query. They live here, beside the tables they read, so the
app layer holds no SQL: a change of schema is a change in ``registry/``, and the
TUI only sees frozen records (``Job``, :class:`TimelineEvent`) and plain counts.

>>> import tempfile
>>> from registry.jobs import Registry
>>> with tempfile.TemporaryDirectory() as state_dir:
...     reads = ControlRoomReads(Registry.open(state_dir).db)
...     reads.live_and_recent_jobs(10), reads.status_counts(), reads.interrupted_count()
([], {}, 0)
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bus.db import BusDB, translate
from registry.records import Job, job_from_row
from registry.vocabulary import FINAL_JOB_STATUSES, Activity, JobStatus, MessageType

CHUNK = 500
"""Job ids bound in one ``IN (...)``: under SQLite's bound-parameter limit."""

_LIVE = (JobStatus.PENDING, JobStatus.RUNNING)
_FINISHED = tuple(sorted(FINAL_JOB_STATUSES))


def _marks(values: Iterable[object]) -> str:
    """``?,?,?`` for one bound parameter per value."""
    return ",".join("?" for _ in values)


@dataclass(frozen=True)
class TimelineEvent:
    """One of a job's events as the bus holds it: its bus seq, when it landed, and its
    payload (the event's own ``seq``, ``event``, ``detail``, ``data``)."""

    bus_seq: int
    ts_ms: int
    payload: Mapping[str, Any] = field(default_factory=dict)


class ControlRoomReads:
    """Read-only queries over one registry database (each thread its own connection,
    as :class:`bus.db.BusDB` keeps them); SQLite errors become bus errors."""

    def __init__(self, db: BusDB) -> None:
        self.db = db

    def _rows(self, sql: str, params: Iterable[object] = ()) -> list[sqlite3.Row]:
        try:
            return list(self.db.conn.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error as error:
            raise translate(error, self.db.path) from error

    def live_and_recent_jobs(self, finished_limit: int) -> list[Job]:
        """Every live job (pending, running), then the newest ``finished_limit``
        finished ones, newest first: what the control room opens on."""
        live = self._rows(f"SELECT * FROM jobs WHERE status IN ({_marks(_LIVE)})", _LIVE)
        finished = self._rows(
            f"SELECT * FROM jobs WHERE status IN ({_marks(_FINISHED)}) "
            "ORDER BY created_at_ms DESC, job_id DESC LIMIT ?",
            (*_FINISHED, finished_limit),
        )
        return [job_from_row(row) for row in (*live, *finished)]

    def jobs_by_id(self, job_ids: Iterable[str]) -> dict[str, Job]:
        """The jobs among ``job_ids`` that exist (a deleted one is simply absent)."""
        wanted = list(job_ids)
        found: dict[str, Job] = {}
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            for row in self._rows(f"SELECT * FROM jobs WHERE job_id IN ({_marks(chunk)})", chunk):
                found[row["job_id"]] = job_from_row(row)
        return found

    def status_counts(self) -> dict[str, int]:
        """How many jobs have each status (a status no job has is absent)."""
        rows = self._rows("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        return {str(row[0]): int(row[1]) for row in rows}

    def interrupted_count(self) -> int:
        """Running jobs whose agent pane is gone (a reboot, tmux killed)."""
        rows = self._rows(
            "SELECT COUNT(*) FROM jobs WHERE status = ? AND activity = ?",
            (JobStatus.RUNNING, Activity.INTERRUPTED),
        )
        return int(rows[0][0]) if rows else 0

    def running_jobs_by_session(self) -> dict[str, list[str]]:
        """Each agent session's running jobs, oldest first."""
        running: dict[str, list[str]] = {}
        for row in self._rows(
            "SELECT agent_session, job_id FROM jobs WHERE status = ? "
            "ORDER BY created_at_ms, job_id",
            (JobStatus.RUNNING,),
        ):
            running.setdefault(str(row[0]), []).append(str(row[1]))
        return running

    def job_timeline(self, job_id: str, limit: int) -> list[TimelineEvent]:
        """The job's newest ``limit`` accepted events, oldest first; a payload that is
        not JSON reads as empty (the line still shows, as "?")."""
        rows = self._rows(
            "SELECT seq, ts_ms, payload FROM messages WHERE correlation_id = ? "
            "AND type = ? ORDER BY seq DESC LIMIT ?",
            (job_id, MessageType.JOB_EVENT, limit),
        )
        timeline = []
        for row in reversed(rows):
            try:
                payload = json.loads(row["payload"]) if row["payload"] else {}
            except ValueError:
                payload = {}
            if not isinstance(payload, dict):
                payload = {}
            timeline.append(TimelineEvent(int(row["seq"]), int(row["ts_ms"]), payload))
        return timeline
