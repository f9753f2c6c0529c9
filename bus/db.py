"""Opening the state database: PRAGMAs, schema migration, and transactions.

One connection per thread (sqlite3 objects are not shared across threads);
``BusDB`` hands each thread its own.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from bus.errors import (
    BusError,
    DatabaseLocked,
    NotABusDatabase,
    ReadOnlyDatabase,
    SchemaTooNew,
    StateDirError,
)
from bus.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 5000
APPLICATION_ID = 0x6F726368  # "orch": marks the file as ours.


def now_ms() -> int:
    """Wall-clock epoch milliseconds, the bus's only timestamp unit."""
    return time.time_ns() // 1_000_000


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (0700) if needed and check we can write into it."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateDirError(f"cannot create state directory {path}: {exc.strerror}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StateDirError(f"state directory {path} is not writable")
    return path


def translate(
    exc: sqlite3.Error, db_path: Path | str, *, busy_timeout_ms: int | None = None
) -> BusError:
    """Turn an sqlite3 error into the bus error a caller can act on.

    ``busy_timeout_ms`` is the wait the connection was given, named in a
    DatabaseLocked message when known (it is a setting: never assume the default).
    """
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and (
        "file is not a database" in text or "malformed" in text
    ):
        return NotABusDatabase(f"{db_path} is not an orchestrate database ({text})")
    if "database is locked" in text or "database is busy" in text:
        waited = "" if busy_timeout_ms is None else f" (waited {busy_timeout_ms} ms)"
        return DatabaseLocked(f"{db_path} is locked by another process{waited}; retry later")
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return ReadOnlyDatabase(f"{db_path} is not writable ({text})")
    return BusError(f"{db_path}: {text}")


def connect(db_path: Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """Open ``db_path`` with the PRAGMAs every connection needs, migrating it if new.

    The connection is in autocommit mode; use ``transaction()`` for writes.
    """
    ensure_private_dir(db_path.parent)
    if not db_path.exists():
        try:  # create it 0600 ourselves: SQLite copies the db's mode to -wal/-shm
            os.close(os.open(db_path, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise ReadOnlyDatabase(f"cannot create {db_path}: {exc.strerror}") from exc
    try:
        conn = sqlite3.connect(
            db_path,
            timeout=busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=True,
        )
    except sqlite3.Error as exc:
        raise translate(exc, db_path, busy_timeout_ms=busy_timeout_ms) from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("PRAGMA foreign_keys = ON")
        _refuse_foreign(conn, db_path)  # before WAL: switching it would change their file
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal" and os.access(db_path, os.W_OK):
            raise NotABusDatabase(f"{db_path}: could not switch to WAL (journal_mode={mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(conn, db_path)
    except sqlite3.Error as exc:
        conn.close()
        raise translate(exc, db_path, busy_timeout_ms=busy_timeout_ms) from exc
    except Exception:
        conn.close()
        raise
    return conn


def recorded_version(conn: sqlite3.Connection, key: str = "schema_version") -> int:
    """The version stored under ``key`` in ``meta``, or 0 for tables not yet built."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        return 0
    try:
        return int(row[0])
    except (TypeError, ValueError):  # written by something else, or damaged: never migrate it
        raise NotABusDatabase(
            f"{_db_name(conn)} is not an orchestrate database "
            f"(meta {key} is {str(row[0])[:24]!r}, not a number)"
        ) from None


def schema_version(conn: sqlite3.Connection) -> int:
    """The bus's schema version (0 for an empty database)."""
    return recorded_version(conn)


def apply_migrations(
    conn: sqlite3.Connection, key: str, migrations: list[str], db_path: Path | str
) -> None:
    """Run ``migrations[v:]`` for the tables versioned by ``key`` in ``meta``.

    ``migrations[n]`` takes the tables from version n to n + 1. A version above
    ``len(migrations)`` was written by a newer release and is refused untouched.
    Cheap when current (one read), so every connection may call it. Layers above
    the bus keep their own key in the same ``meta`` table.
    """
    target = len(migrations)
    version = recorded_version(conn, key)
    if version == target:
        return
    _refuse_newer(key, version, target, db_path)
    with transaction(conn):
        version = recorded_version(conn, key)  # another process may have migrated meanwhile
        _refuse_newer(key, version, target, db_path)
        for step in range(version, target):
            for statement in _statements(migrations[step]):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, str(step + 1)),
            )


def _refuse_newer(key: str, version: int, target: int, db_path: Path | str) -> None:
    if version > target:
        raise SchemaTooNew(
            f"{db_path} has {key} {version}, newer than this orchestrate "
            f"supports ({target}); upgrade orchestrate"
        )


def migrate(conn: sqlite3.Connection, db_path: Path | str = "database") -> None:
    """Bring the bus schema to SCHEMA_VERSION; refuse a database from the future."""
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    _refuse_foreign(conn, db_path)
    # meta must exist before versions can be read from it: it is in MIGRATIONS[0].
    apply_migrations(conn, "schema_version", MIGRATIONS, db_path)
    if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _refuse_foreign(conn: sqlite3.Connection, db_path: Path | str) -> None:
    """NotABusDatabase for an SQLite file of another program: tables, but no bus
    schema version (every orchestrate database records one in the same transaction
    that makes its first tables). Adding ours to it would change their file."""
    if schema_version(conn) != 0:
        return
    tables = [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 3"
        )
    ]
    if tables and conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        raise NotABusDatabase(
            f"{db_path} is not an orchestrate database: it holds another program's "
            f"tables ({', '.join(tables)}); use another --state-dir"
        )


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would COMMIT)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return [s for s in statements if s]


@contextlib.contextmanager
def transaction(
    conn: sqlite3.Connection, *, immediate: bool = True
) -> Iterator[sqlite3.Connection]:
    """BEGIN [IMMEDIATE] ... COMMIT, rolled back on any exception.

    IMMEDIATE takes the write lock up front so read-then-write sequences cannot
    deadlock into SQLITE_BUSY half way. Nested use joins the outer transaction.
    """
    if conn.in_transaction:
        yield conn
        return
    try:
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    except sqlite3.Error as exc:
        raise _translate_on(conn, exc) from exc
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back itself (disk full, I/O error)
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise _translate_on(conn, exc) from exc


def _db_name(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row else "database"


def _translate_on(conn: sqlite3.Connection, exc: sqlite3.Error) -> BusError:
    """``translate`` for an error on ``conn``, with the busy timeout it really has (no
    number, rather than a second error, when the connection cannot say)."""
    busy_timeout_ms: int | None = None
    name: str = "database"
    with contextlib.suppress(sqlite3.Error):  # a closed connection, for one
        busy_timeout_ms = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
        name = _db_name(conn)
    return translate(exc, name, busy_timeout_ms=busy_timeout_ms)


class BusDB:
    """The state database at ``state_dir/state.db``: one connection per thread."""

    def __init__(self, state_dir: Path | str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS):
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / "state.db"
        self.blob_dir = self.state_dir / "blobs"
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the schema migrated) on first use."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, busy_timeout_ms=self.busy_timeout_ms)
            self._local.conn = conn
        return conn

    def transaction(
        self, *, immediate: bool = True
    ) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A write transaction on this thread's connection."""
        return transaction(self.conn, immediate=immediate)

    def close(self) -> None:
        """Close this thread's connection (other threads close their own)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
