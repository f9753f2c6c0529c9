"""The registry's tables in the bus's state.db, the migrations that build them, and the
handling every kind of record in them shares (``Records``).

The registry shares the bus's database so that appending an event and moving a
job's status commit in one transaction. It keeps its own version key,
``registry_schema_version``, in the bus's ``meta`` table, and, like the bus,
refuses a database written by a newer release rather than touching it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

from bus.db import apply_migrations, recorded_version, translate
from bus.messages import Bus, Outgoing, insert_message
from registry.errors import RegistryError
from registry.records import iso_ms_from_ms
from registry.states import StateChange

REGISTRY_SCHEMA_VERSION = 3
VERSION_KEY = "registry_schema_version"


_V1 = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    schema_version INTEGER NOT NULL DEFAULT 1,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    prompt TEXT NOT NULL CHECK (length(prompt) > 0),
    agent TEXT NOT NULL,
    agent_session TEXT NOT NULL,
    broker TEXT,
    topic_prefix TEXT NOT NULL,
    timeout_sec INTEGER NOT NULL,
    idle_timeout_sec INTEGER NOT NULL,
    expected_artifacts TEXT NOT NULL DEFAULT '[]',
    last_seq INTEGER NOT NULL DEFAULT 0,
    auth_token TEXT,
    claimed_at TEXT,
    completed_at TEXT,
    lease_until TEXT,
    lease_until_ms INTEGER,
    retry_count INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    max_seen_seq INTEGER NOT NULL DEFAULT 0,
    missing_seqs TEXT NOT NULL DEFAULT '[]',
    seq_floor INTEGER NOT NULL DEFAULT 0,
    last_event TEXT,
    last_event_at TEXT,
    last_detail TEXT
);
CREATE INDEX IF NOT EXISTS idx_jobs_status ON jobs(status, created_at_ms);
CREATE INDEX IF NOT EXISTS idx_jobs_session ON jobs(agent_session, status, created_at_ms);

CREATE TABLE IF NOT EXISTS job_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    from_status TEXT,
    to_status TEXT NOT NULL,
    transition TEXT,
    reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS idx_job_transitions_job ON job_transitions(job_id, id);

CREATE TABLE IF NOT EXISTS sessions (
    label TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    agent TEXT NOT NULL,
    agent_cmd TEXT NOT NULL DEFAULT '',
    tmux_session TEXT NOT NULL,
    workdir TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS session_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL REFERENCES sessions(label) ON DELETE CASCADE,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    transition TEXT,
    reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS idx_session_transitions_label ON session_transitions(label, id);
"""

# v2: a session remembers the tmux server (socket) it lives on, so that reconciling
# against another server never mistakes it for vanished.
_V2 = """
ALTER TABLE sessions ADD COLUMN tmux_socket TEXT;
"""

# v3: a running job's activity (registry/activity.py) and its history, the agent's
# own session id (to resume its conversation) and when the job counts as done.
_V3 = """
ALTER TABLE jobs ADD COLUMN activity TEXT;
ALTER TABLE jobs ADD COLUMN activity_at_ms INTEGER;
ALTER TABLE jobs ADD COLUMN activity_source TEXT;
ALTER TABLE jobs ADD COLUMN activity_data TEXT;
ALTER TABLE jobs ADD COLUMN agent_session_id TEXT;
ALTER TABLE jobs ADD COLUMN done_when TEXT;
CREATE TABLE IF NOT EXISTS job_activity (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    at_ms INTEGER NOT NULL,
    activity TEXT NOT NULL,
    source TEXT NOT NULL,
    data TEXT NOT NULL,
    seq INTEGER
);
CREATE INDEX IF NOT EXISTS idx_job_activity_job ON job_activity(job_id, id);
"""

# Index n migrates the registry tables from version n to n + 1.
MIGRATIONS: list[str] = [_V1, _V2, _V3]
assert len(MIGRATIONS) == REGISTRY_SCHEMA_VERSION

REGISTRY_TABLES = ("jobs", "job_transitions", "sessions", "session_transitions", "job_activity")


def registry_schema_version(conn: sqlite3.Connection) -> int:
    """The registry version recorded in ``meta`` (0 before the first migration)."""
    return recorded_version(conn, VERSION_KEY)


def ensure_schema(conn: sqlite3.Connection, db_path: Path | str = "state.db") -> None:
    """Bring the registry tables to REGISTRY_SCHEMA_VERSION; refuse newer ones.

    The bus has already migrated its own tables (``meta`` included) on connect.
    """
    try:
        apply_migrations(conn, VERSION_KEY, MIGRATIONS, db_path)
    except sqlite3.Error as exc:
        raise translate(exc, db_path) from exc


# -- the records in those tables ------------------------------------------------------
REGISTRY_AGENT: Final = "registry"
"""The sender of every bus message the registry writes about its own records."""

Record = TypeVar("Record")


@dataclass(frozen=True)
class RecordKind(Generic[Record]):
    """Where one kind of record lives and how a row becomes one: the job, session and
    review stores differ in nothing else that ``Records`` handles."""

    table: str
    key: str
    """The primary-key column, also the history table's column naming the record."""
    history_table: str
    from_column: str
    to_column: str
    decode: Callable[[sqlite3.Row], Record]
    missing: Callable[[str], RegistryError]
    """The error for a key with no record (its message says which key)."""


class Records(Generic[Record]):
    """One kind of record in the bus's database, handled the same way for jobs,
    sessions and reviews: write transactions (with actions for after the commit),
    reads with SQLite errors translated, a record by key, its recorded moves, and the
    bus messages announcing them in the same transaction.

    A store holds one (composition): it adds what is its own, the columns it writes
    and the machine its records move through."""

    def __init__(self, bus: Bus, kind: RecordKind[Record], *, audited: bool = True) -> None:
        """``audited=False`` drops the after-commit actions (the audit log's lines)."""
        self.bus = bus
        self.db = bus.db
        self.kind = kind
        self.audited = audited
        self._local = threading.local()
        ensure_schema(self.db.conn, self.db.path)

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; actions queued in it (``after_commit``) run only after
        COMMIT.

        Calls nest (the outermost one owns the queue). When the caller holds the
        transaction itself, the actions run when the outermost call returns, before
        the caller commits.
        """
        owner = not getattr(self._local, "active", False)
        if owner:
            self._local.active, self._local.after = True, []
        try:
            with self.db.transaction() as tx:
                yield tx
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        finally:
            if owner:
                self._local.active = False
        if owner:
            actions: list[Callable[[], None]] = self._local.after
            self._local.after = []
            for action in actions:
                action()

    def after_commit(self, action: Callable[[], None]) -> None:
        """Queue an action (an audit line) for after COMMIT; dropped if the transaction
        fails, and not queued at all when not audited."""
        if self.audited:
            self._local.after.append(action)

    @property
    def queued(self) -> list[Callable[[], None]]:
        """The actions queued in the current write (a savepoint rolled back drops its own)."""
        after: list[Callable[[], None]] = self._local.after
        return after

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of a read outside any write, SQLite errors translated."""
        try:
            return list(self.db.conn.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def load(self, conn: sqlite3.Connection, key: str) -> Record | None:
        """The record ``key`` as ``conn`` sees it, or None."""
        kind = self.kind
        try:
            row = conn.execute(
                f"SELECT * FROM {kind.table} WHERE {kind.key} = ?", (key,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return kind.decode(row) if row is not None else None

    def require(self, conn: sqlite3.Connection, key: str) -> Record:
        """The record ``key`` as ``conn`` sees it; the kind's not-found error if none."""
        record = self.load(conn, key)
        if record is None:
            raise self.kind.missing(key)
        return record

    def get(self, key: str) -> Record:
        """The record ``key``, read outside any write."""
        return self.require(self.db.conn, key)

    def record_move(
        self,
        conn: sqlite3.Connection,
        key: str,
        at_ms: int,
        before: str | None,
        after: str,
        reason: str,
        transition: str | None,
    ) -> None:
        """Add one move to the record's history (``before`` None: it was created)."""
        kind = self.kind
        conn.execute(
            f"INSERT INTO {kind.history_table} ({kind.key}, at, at_ms, {kind.from_column}, "
            f"{kind.to_column}, reason, transition) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, iso_ms_from_ms(at_ms), at_ms, before, after, reason, transition),
        )

    def history(self, key: str) -> list[StateChange]:
        """The record's recorded moves, oldest first (its not-found error if none)."""
        self.get(key)
        kind = self.kind
        rows = self.read(
            f"SELECT at, {kind.from_column}, {kind.to_column}, reason, transition "
            f"FROM {kind.history_table} WHERE {kind.key} = ? ORDER BY id",
            (key,),
        )
        return [StateChange(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def announce(
        self,
        conn: sqlite3.Connection,
        message_type: str,
        key: str,
        payload: dict[str, Any],
        *,
        message_id: str | None = None,
        from_agent: str = REGISTRY_AGENT,
    ) -> int:
        """Put a message about the record on the bus in the caller's transaction (so it
        commits with the change it tells of); its bus seq."""
        extra = {"id": message_id} if message_id else {}
        message = Outgoing(
            type=message_type,
            from_agent=from_agent,
            payload=payload,
            correlation_id=key,
            **extra,
        )
        return insert_message(conn, self.bus.blobs, message).seq


def record_dict(record: Any, *, omit: Collection[str] = ()) -> dict[str, Any]:
    """A stored record's JSON-ready form: its fields in order, less ``omit``, a nested
    record as its own dict and a tuple as a list (what ``--json`` prints)."""
    return {
        item.name: _plain(getattr(record, item.name))
        for item in dataclasses.fields(record)
        if item.name not in omit
    }


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return record_dict(value)
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value
