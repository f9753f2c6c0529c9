"""The registry's live numbers (`registry.live_stats`), read from a real state dir
filled through the registry: what `orchestrate metrics` exports."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bus.errors import DatabaseLocked, NotABusDatabase, SchemaTooNew
from bus.export import default_target, export_jsonl
from bus.messages import Outgoing
from registry.activity import Observation
from registry.errors import DuplicateEvent
from registry.events import build_event
from registry.jobs import Registry
from registry.live_stats import EventTally, NoStateDatabase, read_live_stats
from registry.sessions import SessionStore
from registry.signing import sign


def read(state_dir: Path):  # type: ignore[no-untyped-def]
    return read_live_stats(state_dir, busy_timeout_ms=200)


def raw(state_dir: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(state_dir / "state.db")
    try:
        rows = conn.execute(sql, args).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()


def running(registry: Registry, agent: str, activity: str | None = None) -> str:
    job = registry.register("do it", agent, f"s-{agent}")
    registry.set_status(job.job_id, "running")
    if activity is not None:
        registry.observe(job.job_id, Observation(activity, f"hook:{agent}:test"))
    return job.job_id


def test_jobs_activities_and_waiting_as_the_registry_holds_them(state_dir: Path) -> None:
    """Jobs per agent and status (every status, zeros included), running jobs per
    activity, and the waiting count the control room's header shows: jobs whose
    agent's dialog is up or who published permission_required, and a job running
    since before activities were recorded (activity NULL) that asked."""
    registry = Registry.open(state_dir)
    registry.register("later", "claude", "s-claude")
    running(registry, "claude", "working")
    running(registry, "codex", "waiting")
    asked = running(registry, "codex")
    registry.publish(asked, "permission_required", "may I run the tests?")
    running(registry, "aider")  # picked, nothing seen yet: starting
    old = running(registry, "claude")
    registry.publish(old, "permission_required", "from before activities were recorded")
    raw(state_dir, "UPDATE jobs SET activity = NULL WHERE job_id = ?", old)
    done = running(registry, "gemini", "idle")
    registry.set_status(done, "completed")
    stopped = registry.register("never mind", "gemini", "s-gemini")
    registry.cancel(stopped.job_id)

    stats = read(state_dir)

    assert {key: n for key, n in stats.jobs.items() if n} == {
        ("claude", "pending"): 1,
        ("claude", "running"): 2,
        ("codex", "running"): 2,
        ("aider", "running"): 1,
        ("gemini", "completed"): 1,
        ("gemini", "cancelled"): 1,
    }
    assert len(stats.jobs) == 4 * 5  # every status of every agent, for rates and alerts
    assert {key: n for key, n in stats.running.items() if n} == {
        ("claude", "working"): 1,
        ("claude", "unknown"): 1,
        ("codex", "waiting"): 2,
        ("aider", "starting"): 1,
    }
    assert stats.waiting == 3 == sum(job.waiting for job in registry.list())


def test_sessions_by_state(state_dir: Path) -> None:
    registry = Registry.open(state_dir)
    sessions = SessionStore(registry.bus)
    for label in ("one", "two", "three"):
        sessions.create(label, "claude", tmux_session=label)
    sessions.stop("two")
    sessions.stop("three", mode="hard")
    assert read(state_dir).sessions == {
        "running": 1,
        "stopped": 1,
        "terminated": 1,
        "archived": 0,
    }


def test_events_per_agent_count_each_recorded_event_once(state_dir: Path) -> None:
    """A duplicate (the same seq again, as an MQTT redelivery brings it) is not
    counted twice; events of each agent's jobs add up."""
    registry = Registry.open(state_dir)
    first = running(registry, "claude", "working")  # 1 event: the activity
    registry.publish(first, "progress", "half way")
    second = running(registry, "claude")
    registry.publish(second, "progress", "a start")
    third = running(registry, "codex")
    event = sign(build_event(third, 1, "progress", "once"), registry.get(third).auth_token or "")
    registry.record_event(event.to_bytes(), via="mqtt")
    with pytest.raises(DuplicateEvent):
        registry.record_event(event.to_bytes(), via="mqtt")

    assert read(state_dir).events == {"claude": 3, "codex": 1}


def test_event_age_and_ingest_lag_of_the_newest_event(state_dir: Path) -> None:
    """Ingest lag is how late the newest event was recorded after its own timestamp:
    an event published two minutes ago and recorded now lags two minutes."""
    registry = Registry.open(state_dir)
    assert read(state_dir).newest_event is None
    job_id = running(registry, "claude")
    stamped = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=2)
    event = build_event(job_id, 1, "progress", "from a slow host", now=stamped)
    registry.record_event(sign(event, registry.get(job_id).auth_token or "").to_bytes())
    [(recorded_ms,)] = raw(state_dir, "SELECT ts_ms FROM messages WHERE id = ?", f"{job_id}:1")

    stats = read(state_dir)

    assert stats.newest_event is not None
    assert stats.newest_event.recorded_ms == recorded_ms
    assert stats.ingest_lag_s == (int(recorded_ms) - int(stamped.timestamp() * 1000)) / 1000
    assert 119 < (stats.ingest_lag_s or 0) < 600
    assert stats.event_age_s == max(0, (stats.at_ms - int(recorded_ms)) / 1000)


def test_bus_size_export_backlog_and_blobs(state_dir: Path) -> None:
    registry = Registry.open(state_dir)
    running(registry, "claude", "working")
    registry.bus.publish(Outgoing(type="note", from_agent="me", payload={"text": "x" * 10_000}))
    [(messages,)] = raw(state_dir, "SELECT count(*) FROM messages")
    [(blob_ref,)] = raw(state_dir, "SELECT payload_ref FROM messages WHERE type = 'note'")

    stats = read(state_dir)

    assert stats.bus_messages == messages > 0
    assert stats.export_backlog == messages
    assert stats.blobs == 1
    blob = state_dir / "blobs" / str(blob_ref)
    assert stats.storage_bytes["blobs"] == blob.stat().st_size > 10_000
    assert stats.storage_bytes["state.db"] == (state_dir / "state.db").stat().st_size
    assert stats.storage_bytes["state.db-wal"] == (state_dir / "state.db-wal").stat().st_size

    export_jsonl(registry.bus, default_target(registry.bus))
    assert read(state_dir).export_backlog == 0


def test_reading_changes_nothing_and_creates_nothing(state_dir: Path) -> None:
    registry = Registry.open(state_dir)
    running(registry, "claude", "working")
    registry.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = hashlib.sha256((state_dir / "state.db").read_bytes()).hexdigest()
    read(state_dir)
    assert hashlib.sha256((state_dir / "state.db").read_bytes()).hexdigest() == before
    assert (state_dir / "state.db-wal").stat().st_size == 0

    elsewhere = state_dir.parent / "nothing-here"
    with pytest.raises(NoStateDatabase, match="no state database"):
        read(elsewhere)
    assert not elsewhere.exists()


def test_a_writer_in_the_middle_of_a_transaction_does_not_hold_up_a_read(
    state_dir: Path,
) -> None:
    """WAL: the read sees the last committed state at once, while a writer holds
    the write lock with an uncommitted job in it."""
    registry = Registry.open(state_dir)
    running(registry, "claude", "working")
    writer = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE jobs SET status = 'completed'")
        stats = read_live_stats(state_dir, busy_timeout_ms=0)
        assert stats.jobs[("claude", "running")] == 1
        writer.execute("COMMIT")
    finally:
        writer.close()


def test_a_database_held_exclusively_is_reported_locked(state_dir: Path) -> None:
    registry = Registry.open(state_dir)
    running(registry, "claude", "working")
    registry.db.close()
    holder = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE jobs SET updated_at = updated_at")
        holder.execute("COMMIT")  # exclusive mode keeps the lock after the commit
        with pytest.raises(DatabaseLocked, match="locked"):
            read(state_dir)
    finally:
        holder.close()
    assert read(state_dir).jobs[("claude", "running")] == 1


def test_damaged_foreign_and_newer_databases_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "state.db").write_bytes(b"this is not sqlite, not at all" * 100)
    with pytest.raises(NotABusDatabase):
        read(garbage)

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    conn = sqlite3.connect(foreign / "state.db")
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(NotABusDatabase, match="not an orchestrate database"):
        read(foreign)

    newer = tmp_path / "newer"
    Registry.open(newer).db.close()
    conn = sqlite3.connect(newer / "state.db")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'registry_schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNew, match="upgrade orchestrate"):
        read(newer)


def test_a_bus_without_registry_tables_reads_as_empty(state_dir: Path) -> None:
    """`msg send` alone makes a bus with no jobs table: zero jobs, its messages counted."""
    from bus.db import BusDB
    from bus.messages import Bus

    bus = Bus(BusDB(state_dir))
    bus.publish(Outgoing(type="note", from_agent="me", payload={}))
    stats = read(state_dir)
    assert stats.jobs == {} and stats.events == {} and stats.bus_messages == 1
    assert stats.sessions == {"running": 0, "stopped": 0, "terminated": 0, "archived": 0}


def test_a_kept_tally_counts_only_what_came_since_and_agrees_with_a_fresh_read(
    state_dir: Path, tmp_path: Path
) -> None:
    """The metrics server keeps an EventTally between scrapes: the second read counts
    the messages after the first (a count the test plants in the tally survives, so
    nothing was counted again) and agrees with a read from scratch."""
    registry = Registry.open(state_dir)
    first = running(registry, "claude", "working")
    tally = EventTally()
    read_live_stats(state_dir, busy_timeout_ms=200, tally=tally)
    registry.publish(first, "progress", "more")
    second = running(registry, "codex", "waiting")
    registry.publish(second, "progress", "also")
    registry.bus.publish(Outgoing(type="note", from_agent="me", payload={}))

    tally.messages += 1000  # planted: a rescan would lose it
    kept = read_live_stats(state_dir, busy_timeout_ms=200, tally=tally)
    fresh = read(state_dir)

    assert kept.bus_messages == fresh.bus_messages + 1000
    assert kept.events == fresh.events == {"claude": 2, "codex": 2}
    assert kept.newest_event == fresh.newest_event is not None
    [(top,)] = raw(state_dir, "SELECT max(seq) FROM messages")
    assert tally.last_seq == top

    # Another database in its place (a state dir made again, as many messages or
    # more): the tally starts over.
    registry.db.close()
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (state_dir / name).unlink(missing_ok=True)
    again = Registry.open(state_dir)
    for _ in range(3):
        running(again, "aider", "idle")
    [(new_top,)] = raw(state_dir, "SELECT max(seq) FROM messages")
    assert int(new_top) >= int(top)  # type: ignore[call-overload]
    assert read_live_stats(state_dir, busy_timeout_ms=200, tally=tally).events == {"aider": 3}
    assert tally.messages == read(state_dir).bus_messages
