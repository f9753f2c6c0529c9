"""Opening the database: PRAGMAs, permissions, migrations and the refusals."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from bus.db import BusDB, _translate_on, connect, transaction
from bus.errors import DatabaseLocked, NotABusDatabase, SchemaTooNew, StateDirError
from bus.messages import Bus, Outgoing
from bus.schema import SCHEMA_VERSION


def test_every_connection_has_the_required_pragmas(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s" / "state.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert int(row[0]) == SCHEMA_VERSION


def test_state_files_are_private(tmp_path: Path) -> None:
    db = BusDB(tmp_path / "s")
    Bus(db).publish(Outgoing(type="t", from_agent="a"))
    assert stat.S_IMODE(db.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.state_dir.stat().st_mode) == 0o700
    for suffix in ("-wal", "-shm"):
        sidecar = Path(str(db.path) + suffix)
        if sidecar.exists():
            assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600


def test_reopening_keeps_data_and_does_not_remigrate(tmp_path: Path) -> None:
    Bus(BusDB(tmp_path)).publish(Outgoing(type="t", from_agent="a", payload=1))
    assert [m.payload for m in Bus(BusDB(tmp_path)).poll("r")] == [1]


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is a text file, not a database\n" * 10)
    before = path.read_bytes()
    with pytest.raises(NotABusDatabase, match="not an orchestrate database"):
        connect(path)
    assert path.read_bytes() == before


def test_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    connect(path).execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(SchemaTooNew, match="schema_version 99"):
        connect(path)
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "99"


def test_a_schema_version_that_is_not_a_number_is_not_ours(tmp_path: Path) -> None:
    """A meta row no orchestrate wrote (or a damaged one) is refused as such, untouched,
    not a ValueError from int()."""
    path = tmp_path / "state.db"
    connect(path).execute("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'")
    with pytest.raises(NotABusDatabase, match="meta schema_version is 'abc', not a number"):
        connect(path)
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "abc"


def test_a_locked_database_beyond_busy_timeout_is_a_clear_error(tmp_path: Path) -> None:
    holder = connect(tmp_path / "state.db")
    holder.execute("BEGIN IMMEDIATE")
    bus = Bus(BusDB(tmp_path, busy_timeout_ms=100))
    with pytest.raises(DatabaseLocked, match=r"locked by another process \(waited 100 ms\)"):
        bus.publish(Outgoing(type="t", from_agent="a"))  # the wait it had, not the default
    holder.execute("ROLLBACK")
    bus.publish(Outgoing(type="t", from_agent="a"))  # and works once released


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_a_read_only_state_dir_is_a_clear_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(StateDirError):
            connect(tmp_path / "sub" / "state.db")
    finally:
        tmp_path.chmod(0o700)


def test_a_transaction_sqlite_already_rolled_back_keeps_its_real_error(tmp_path: Path) -> None:
    """SQLite ends the transaction itself on some errors (disk full, I/O): the caller
    must see that error, not "cannot rollback - no transaction is active"."""
    db = BusDB(tmp_path)

    class DiskFull(Exception):
        pass

    with pytest.raises(DiskFull), transaction(db.conn):
        db.conn.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')")
        db.conn.execute("ROLLBACK")  # as SQLite does on SQLITE_FULL
        raise DiskFull("database or disk is full")
    assert db.conn.execute("SELECT count(*) FROM meta WHERE key = 'k'").fetchone()[0] == 0


def test_another_programs_sqlite_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    """A state.db that is some other program's SQLite database: before, orchestrate
    switched it to WAL and added all of its tables to it."""
    path = tmp_path / "state.db"
    theirs = sqlite3.connect(path)
    theirs.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    theirs.execute("INSERT INTO invoices (total) VALUES (9.5)")
    theirs.commit()
    theirs.close()
    before = path.read_bytes()
    with pytest.raises(NotABusDatabase, match=r"another program's tables \(invoices\)"):
        connect(path)
    assert path.read_bytes() == before


def test_an_error_on_a_connection_that_cannot_answer_is_still_translated(
    tmp_path: Path,
) -> None:
    """The translation asks the connection for its busy timeout; one that cannot say
    (closed) gives the error without the number, not a second, raw sqlite3 error."""
    conn = connect(tmp_path / "state.db")
    conn.close()
    error = _translate_on(conn, sqlite3.OperationalError("database is locked"))
    assert isinstance(error, DatabaseLocked)
    assert str(error) == "database is locked by another process; retry later"
