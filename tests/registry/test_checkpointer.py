"""The ingest bridge's background checkpointer keeps the WAL from growing without bound."""

from __future__ import annotations

import threading
from pathlib import Path

from bus.db import connect
from registry.events import build_event
from registry.ingest import Checkpointer
from registry.jobs import Registry


def wal_bytes(registry: Registry) -> int:
    return (registry.db.path.parent / "state.db-wal").stat().st_size


def test_a_full_round_lets_the_next_commits_start_the_wal_over(tmp_path: Path) -> None:
    """The bridge's connection never checkpoints; once the WAL passes restart_pages a
    round copies it all back under the writer lock, and the next commits write from
    the top of the WAL again: as many commits again do not grow the file."""
    registry = Registry.open(tmp_path / "state", audited=False)
    registry.db.conn.execute("PRAGMA wal_autocheckpoint = 0")  # only ours
    job = registry.register("p", "a", "s", sign_events=False)
    lock = threading.Lock()
    checkpointer = Checkpointer(registry.db.path, 60.0, lock, restart_pages=50)
    conn = connect(registry.db.path)

    def record(seqs: range) -> None:
        for seq in seqs:
            registry.record_events([build_event(job.job_id, seq, "progress").to_bytes()])

    try:
        record(range(1, 41))
        grown = wal_bytes(registry)
        assert checkpointer.checkpoint(conn) >= 50
        assert not lock.locked()
        record(range(41, 81))
        assert wal_bytes(registry) <= grown  # reused from the top, not appended to
        assert registry.get(job.job_id).last_seq == 80
    finally:
        conn.close()


def test_below_the_threshold_a_round_never_takes_the_writer_lock(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path / "state", audited=False)
    registry.register("p", "a", "s")
    lock = threading.Lock()
    checkpointer = Checkpointer(registry.db.path, 60.0, lock, restart_pages=1_000_000)
    conn = connect(registry.db.path)
    try:
        with lock:  # held by a "commit": the round must not wait for it
            assert checkpointer.checkpoint(conn) >= 0
    finally:
        conn.close()
