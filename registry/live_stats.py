"""A read-only snapshot of the registry's live numbers: what `orchestrate metrics` exports.

Read on every scrape, so it must be cheap and harmless: the database is opened
read-only (``mode=ro``; nothing is created or migrated), every query runs in one
short read transaction (a consistent snapshot; in WAL mode readers never block
writers), and each query is answered from an index. Job labels (agent names)
come back as stored: they are hostile text, and escaping them is the sink's job.

Definitions (the README's Metrics section repeats them):

* events ingested: the ``job.event`` messages on the bus, one per event the
  registry accepted (deduplicated), counted by the agent of their job. The bus
  does not keep which transport (CLI, MQTT, bus) brought an event, so there is
  no count by source.
* event age: now minus when the newest event was recorded (the registry's clock).
* ingest lag: for that newest event, when it was recorded minus its own
  ``timestamp`` (the publisher's clock, whole seconds): how late the latest
  event arrived. It includes any clock skew between the agent's host and this one.
* export backlog: bus messages not yet in ``export/bus.jsonl`` (the history's input).

Counting a million events is the one read that grows with the bus: an index
scan of every event. The bus is append-only (nothing deletes a message, and
seqs commit in order), so a caller that reads again and again (the metrics
server) keeps an :class:`EventTally`, and each later read counts only the
messages after the last seq it saw.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bus.blobs import BlobMissing, BlobStore
from bus.db import now_ms, recorded_version, translate
from bus.errors import BusError, NotABusDatabase, SchemaTooNew
from bus.schema import SCHEMA_VERSION
from registry.activity import ACTIVITIES
from registry.bus_types import JOB_EVENT
from registry.states import JOB, SESSION
from registry.store import REGISTRY_SCHEMA_VERSION, VERSION_KEY
from registry.vocabulary import Activity, EventType, JobStatus

UNKNOWN_ACTIVITY = "unknown"
"""The activity label of a running job no signal has described yet."""
UNKNOWN_AGENT = "unknown"
"""The agent label of events whose job is not in the jobs table."""

STORAGE_FILES = ("state.db", "state.db-wal")


class NoStateDatabase(BusError):
    """The state directory holds no database yet: nothing was ever recorded there."""


@dataclass(frozen=True)
class NewestEvent:
    """The last event the registry recorded."""

    recorded_ms: int
    published_ms: int | None  # its own timestamp; None if unreadable


@dataclass
class EventTally:
    """What the bus's messages add up to, up to ``last_seq``: kept between reads by a
    caller that reads often, so each read counts only what came after.

    The messages table is append-only and seqs commit in order, so every message
    after ``last_seq`` in a later snapshot is one this tally has not counted. The
    message at ``last_seq`` is its anchor: when the database no longer holds that
    message id there (another database in its place), the tally starts over.
    """

    last_seq: int = 0
    messages: int = 0
    events_per_job: dict[str, int] = field(default_factory=dict)
    newest_event_seq: int = 0
    anchor: str | None = None  # the id of the message at last_seq

    def start_over(self) -> None:
        self.last_seq = self.messages = self.newest_event_seq = 0
        self.events_per_job = {}
        self.anchor = None


@dataclass(frozen=True)
class LiveStats:
    """The registry's live numbers at ``at_ms``."""

    at_ms: int
    jobs: dict[tuple[str, str], int]
    """(agent, status) -> jobs; every status of every agent seen, zeros included."""
    running: dict[tuple[str, str], int]
    """(agent, activity) -> running jobs; every activity of every agent seen."""
    waiting: int
    """Running jobs waiting for a person (as the control room's header counts them)."""
    sessions: dict[str, int]
    """Session state -> sessions, every state included."""
    events: dict[str, int]
    """Agent -> events recorded for that agent's jobs."""
    newest_event: NewestEvent | None
    bus_messages: int
    export_backlog: int
    storage_bytes: dict[str, int] = field(default_factory=dict)
    """``state.db``, ``state.db-wal`` and ``blobs`` -> bytes on disk."""
    blobs: int = 0

    @property
    def event_age_s(self) -> float | None:
        """Seconds since the newest event was recorded (None: no event yet)."""
        if self.newest_event is None:
            return None
        return max(0.0, (self.at_ms - self.newest_event.recorded_ms) / 1000)

    @property
    def ingest_lag_s(self) -> float | None:
        """How late the newest event was recorded after its own timestamp (None: unknown)."""
        if self.newest_event is None or self.newest_event.published_ms is None:
            return None
        return (self.newest_event.recorded_ms - self.newest_event.published_ms) / 1000


def read_live_stats(
    state_dir: Path, *, busy_timeout_ms: int, tally: EventTally | None = None
) -> LiveStats:
    """Read the live numbers of ``state_dir`` without writing anything.

    ``tally`` carries the event counts of an earlier read of the same database
    forward (updated in place; one caller at a time); without one, every event is
    counted afresh. Raises NoStateDatabase (no state.db yet), NotABusDatabase (damaged or
    another program's file), SchemaTooNew, or DatabaseLocked (another process
    holds the database exclusively past ``busy_timeout_ms``).
    """
    db_path = state_dir / "state.db"
    if not db_path.is_file():
        raise NoStateDatabase(f"no state database in {state_dir} (nothing recorded there yet)")
    with _read_only(db_path, busy_timeout_ms) as conn:
        try:
            conn.execute("BEGIN")  # one snapshot for every count
            try:
                stats = _read(conn, db_path, state_dir, tally or EventTally())
            finally:
                if conn.in_transaction:  # SQLite may have ended it itself on an error
                    conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise translate(exc, db_path, busy_timeout_ms=busy_timeout_ms) from exc
    return stats


@contextlib.contextmanager
def _read_only(db_path: Path, busy_timeout_ms: int) -> Iterator[sqlite3.Connection]:
    uri = f"file:{urllib.parse.quote(str(db_path))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise translate(exc, db_path, busy_timeout_ms=busy_timeout_ms) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        yield conn
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, db_path: Path, state_dir: Path, tally: EventTally) -> LiveStats:
    at_ms = now_ms()
    bus_version = recorded_version(conn)
    registry_version = recorded_version(conn, VERSION_KEY)
    if bus_version == 0 and _has_tables(conn):
        raise NotABusDatabase(f"{db_path} is not an orchestrate database")
    for key, version, known in (
        ("schema_version", bus_version, SCHEMA_VERSION),
        (VERSION_KEY, registry_version, REGISTRY_SCHEMA_VERSION),
    ):
        if version > known:
            raise SchemaTooNew(
                f"{db_path} has {key} {version}, newer than this orchestrate "
                f"supports ({known}); upgrade orchestrate"
            )
    jobs: dict[tuple[str, str], int] = {}
    running: dict[tuple[str, str], int] = {}
    sessions = dict.fromkeys(SESSION.states, 0)
    waiting = 0
    agent_of: dict[str, str] = {}
    if registry_version >= 1:
        agent_of, jobs = _jobs(conn)
        sessions.update(_counts(conn, "SELECT state, count(*) FROM sessions GROUP BY state"))
    if registry_version >= 3:  # activity columns
        running, waiting = _running(conn, {agent for agent, _ in jobs})
    events: dict[str, int] = {}
    newest: NewestEvent | None = None
    bus_messages = export_backlog = 0
    if bus_version >= 1:
        top = int(conn.execute("SELECT max(seq) FROM messages").fetchone()[0] or 0)
        _count_messages(conn, tally, top)
        events = {agent: 0 for agent in agent_of.values()}
        for job_id, count in tally.events_per_job.items():
            agent = agent_of.get(job_id, UNKNOWN_AGENT)
            events[agent] = events.get(agent, 0) + count
        newest = _newest_event(conn, tally.newest_event_seq, state_dir)
        bus_messages = tally.messages
        exported = conn.execute("SELECT last_seq FROM export_state WHERE id = 1").fetchone()
        export_backlog = max(0, top - (int(exported[0]) if exported else 0))
    blob_count, blob_bytes = _blob_usage(state_dir / "blobs")
    storage = {name: _size(state_dir / name) for name in STORAGE_FILES}
    storage["blobs"] = blob_bytes
    return LiveStats(
        at_ms=at_ms,
        jobs=jobs,
        running=running,
        waiting=waiting,
        sessions=sessions,
        events=events,
        newest_event=newest,
        bus_messages=bus_messages,
        export_backlog=export_backlog,
        storage_bytes=storage,
        blobs=blob_count,
    )


def _has_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' LIMIT 1"
    ).fetchone()
    return row is not None


def _counts(conn: sqlite3.Connection, sql: str) -> dict[str, int]:
    return {str(key): int(count) for key, count in conn.execute(sql)}


def _jobs(conn: sqlite3.Connection) -> tuple[dict[str, str], dict[tuple[str, str], int]]:
    """Each job's agent (to label its events), and jobs per (agent, status)."""
    agent_of: dict[str, str] = {}
    jobs: dict[tuple[str, str], int] = {}
    for job_id, agent, status in conn.execute("SELECT job_id, agent, status FROM jobs"):
        agent_of[job_id] = agent
        if (agent, JOB.initial) not in jobs:
            jobs.update(dict.fromkeys(((agent, known) for known in JOB.states), 0))
        jobs[(agent, status)] = jobs.get((agent, status), 0) + 1
    return agent_of, jobs


def _running(conn: sqlite3.Connection, agents: set[str]) -> tuple[dict[tuple[str, str], int], int]:
    """Running jobs per (agent, activity), and how many wait for a person: activity
    ``waiting``, or, before any activity was seen, a ``permission_required`` event
    (``Job.waiting``, what the control room's header counts)."""
    labels = (*ACTIVITIES, UNKNOWN_ACTIVITY)
    running = {(agent, activity): 0 for agent in agents for activity in labels}
    waiting = 0
    rows = conn.execute(
        "SELECT agent, activity, last_event = :asked, count(*) FROM jobs "
        "WHERE status = :running GROUP BY agent, activity, last_event = :asked",
        {"asked": EventType.PERMISSION_REQUIRED, "running": JobStatus.RUNNING},
    )
    for agent, activity, asked, count in rows:
        label = activity if activity in ACTIVITIES else UNKNOWN_ACTIVITY
        running[(agent, label)] = running.get((agent, label), 0) + count
        if activity == Activity.WAITING or (activity is None and asked):
            waiting += count
    return running, waiting


def _count_messages(conn: sqlite3.Connection, tally: EventTally, top: int) -> None:
    """Bring ``tally`` up to seq ``top`` (this snapshot's newest message). It changes
    only once every row is read: a read that fails half way counts nothing twice."""
    if tally.last_seq and _message_id(conn, tally.last_seq) != tally.anchor:
        tally.start_over()
    messages, newest = 0, tally.newest_event_seq
    per_job: dict[str, int] = {}
    if tally.last_seq == 0:  # everything: one pass over the (type, from_agent) index
        messages = int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
        rows = conn.execute(
            "SELECT from_agent, count(*), max(seq) FROM messages WHERE type = ? "
            "GROUP BY from_agent",
            (JOB_EVENT,),
        )
        for job_id, count, last in rows:  # an event's from_agent is its job id
            per_job[job_id] = int(count)
            newest = max(newest, int(last))
    else:  # only what came since: a range of the primary key
        rows = conn.execute(
            "SELECT seq, type, from_agent FROM messages WHERE seq > ? AND seq <= ?",
            (tally.last_seq, top),
        )
        for seq, kind, job_id in rows:
            messages += 1
            if kind == JOB_EVENT:
                per_job[job_id] = per_job.get(job_id, 0) + 1
                newest = max(newest, int(seq))
    for job_id, count in per_job.items():
        tally.events_per_job[job_id] = tally.events_per_job.get(job_id, 0) + count
    tally.messages += messages
    tally.newest_event_seq = newest
    tally.last_seq = top
    tally.anchor = _message_id(conn, top) if top else None


def _message_id(conn: sqlite3.Connection, seq: int) -> str | None:
    row = conn.execute("SELECT id FROM messages WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])


def _newest_event(conn: sqlite3.Connection, seq: int, state_dir: Path) -> NewestEvent | None:
    """The event at ``seq`` (the newest recorded), or None when there is none."""
    if not seq:
        return None
    row = conn.execute(
        "SELECT ts_ms, payload, payload_ref FROM messages WHERE seq = ?", (seq,)
    ).fetchone()
    if row is None:
        return None
    published = _published_ms(row[1], row[2], state_dir)
    return NewestEvent(recorded_ms=int(row[0]), published_ms=published)


def _published_ms(payload: str | None, payload_ref: str | None, state_dir: Path) -> int | None:
    """The event's own ``timestamp`` in epoch ms, or None when it cannot be read."""
    try:
        if payload is None and payload_ref is not None:
            payload = BlobStore(state_dir / "blobs").load(payload_ref).decode("utf-8")
        stamp = json.loads(payload or "null")["timestamp"]
        return int(datetime.fromisoformat(stamp).timestamp() * 1000)
    except (BlobMissing, OSError, UnicodeDecodeError, ValueError, TypeError, KeyError):
        return None


def _blob_usage(directory: Path) -> tuple[int, int]:
    """Blob files and their bytes (temp files of a write in progress left out; a
    directory that cannot be listed counts as empty: sizes are never worth a failed scrape)."""
    count = total = 0
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith("sha256-"):
                with contextlib.suppress(OSError):  # removed meanwhile
                    total += entry.stat(follow_symlinks=False).st_size
                    count += 1
    return count, total


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
