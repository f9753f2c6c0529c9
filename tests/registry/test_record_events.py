"""Registry.record_events: a batch in one transaction, each event with its own verdict."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bus.errors import BusError
from registry.errors import (
    DuplicateEvent,
    EventAfterTerminal,
    InvalidEvent,
    JobNotFound,
    SignatureError,
)
from registry.events import build_event
from registry.jobs import Recorded, Registry
from registry.signing import sign


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def event_ids(registry: Registry, job_id: str) -> list[str]:
    """The job's `job.event` message ids in bus order."""
    return [
        m.id
        for m in registry.bus.read_after(0, limit=100_000)
        if m.type == "job.event" and m.correlation_id == job_id
    ]


def moves(registry: Registry, job_id: str) -> list[tuple[str | None, str]]:
    return [(c.from_state, c.to_state) for c in registry.history(job_id)]


def test_a_mixed_batch_gives_each_event_its_own_verdict(registry: Registry) -> None:
    """Good, duplicate (of a stored event and within the batch), forged, unknown-job,
    malformed and after-the-end events in one batch: the good ones are stored once,
    in order, the refused ones change nothing, and the status moves as it would
    one event at a time."""
    job = registry.register("p", "a", "s")
    token = registry.get(job.job_id).auth_token
    assert token is not None
    registry.record_event(sign(build_event(job.job_id, 1, "started"), token), via="mqtt")

    def good(seq: int, name: str = "progress") -> bytes:
        return sign(build_event(job.job_id, seq, name, f"step {seq}"), token).to_bytes()

    batch: list[bytes] = [
        good(2),
        good(1),  # already stored before the batch
        sign(build_event(job.job_id, 3, "error", "forged"), "guessed-token-123").to_bytes(),
        good(3),
        good(3),  # a QoS 1 redelivery inside the same batch
        build_event("0badf00d", 1, "started").to_bytes(),
        b"{not json",
        good(4, "completed"),
        good(5),  # after the end
    ]
    verdicts = registry.record_events(batch, via="mqtt")

    assert [type(v) for v in verdicts] == [
        Recorded,
        DuplicateEvent,
        SignatureError,
        Recorded,
        DuplicateEvent,
        JobNotFound,
        InvalidEvent,
        Recorded,
        EventAfterTerminal,
    ]
    recorded = [v for v in verdicts if isinstance(v, Recorded)]
    assert [(r.seq, r.status) for r in recorded] == [(2, "running"), (3, "running"),
                                                     (4, "completed")]  # fmt: skip
    assert recorded[0].bus_seq < recorded[1].bus_seq < recorded[2].bus_seq
    assert event_ids(registry, job.job_id) == [f"{job.job_id}:{seq}" for seq in (1, 2, 3, 4)]
    assert moves(registry, job.job_id) == [(None, "pending"), ("pending", "running"),
                                           ("running", "completed")]  # fmt: skip
    stored = registry.get(job.job_id)
    assert (stored.status, stored.last_seq, stored.last_event) == ("completed", 4, "completed")
    assert stored.missing_count == 0 and stored.lease_until is None
    # Audit lines only for what was recorded: refused events leave no trace.
    entries = list(registry.audit.iter_events(job.job_id))
    assert [e["event"]["seq"] for e in entries if e["kind"] == "received"] == [1, 2, 3, 4]


def test_a_batch_moves_a_pending_job_and_tracks_gaps(registry: Registry) -> None:
    """The job read once per batch still sees the batch's own writes: the first
    event starts it, a skipped seq is missing until a later event of the same
    batch fills it."""
    job = registry.register("p", "a", "s", sign_events=False)
    verdicts = registry.record_events(
        [build_event(job.job_id, seq, "progress").to_bytes() for seq in (1, 2, 5, 3)]
    )
    assert [v.missing_count for v in verdicts if isinstance(v, Recorded)] == [0, 0, 2, 1]
    stored = registry.get(job.job_id)
    assert stored.status == "running" and stored.missing_seqs == [[4, 4]]
    assert (stored.last_seq, stored.max_seen_seq) == (5, 5)
    assert moves(registry, job.job_id) == [(None, "pending"), ("pending", "running")]


def test_an_empty_batch_and_an_all_refused_batch_store_nothing(registry: Registry) -> None:
    job = registry.register("p", "a", "s")
    before = registry.bus.read_after(0, limit=1000)
    assert registry.record_events([]) == []
    verdicts = registry.record_events([b"", build_event(job.job_id, 1, "started").to_bytes()])
    assert [type(v) for v in verdicts] == [InvalidEvent, SignatureError]
    assert registry.bus.read_after(0, limit=1000) == before
    assert registry.get(job.job_id).status == "pending"


def test_a_locked_database_raises_and_stores_nothing(tmp_path: Path) -> None:
    """A transient failure is the whole batch's: it raises (the caller retries)."""
    registry = Registry.open(tmp_path / "state", busy_timeout_ms=20)
    job = registry.register("p", "a", "s", sign_events=False)
    blocker = sqlite3.connect(registry.db.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(BusError):
            registry.record_events([build_event(job.job_id, 1, "started").to_bytes()])
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert event_ids(registry, job.job_id) == []
    [verdict] = registry.record_events([build_event(job.job_id, 1, "started").to_bytes()])
    assert isinstance(verdict, Recorded) and verdict.status == "running"


def test_progress_extends_the_lease_only_once_half_of_it_is_gone(registry: Registry) -> None:
    """Each event is a sign of life, but a far-off lease is left alone (no write)."""
    job = registry.register("p", "a", "s", sign_events=False, timeout_sec=100)
    registry.record_event(build_event(job.job_id, 1, "started"))
    lease = registry.get(job.job_id).lease_until_ms
    assert lease is not None
    registry.record_event(build_event(job.job_id, 2, "progress"))
    assert registry.get(job.job_id).lease_until_ms == lease  # 100 s left: untouched
    near = lease - 60_000  # only 40 s left: less than half the timeout
    with registry.db.transaction() as conn:
        conn.execute("UPDATE jobs SET lease_until_ms = ? WHERE job_id = ?", (near, job.job_id))
        conn.execute("UPDATE task_claims SET lease_until_ms = ? WHERE task_id = ?",
                     (near, job.job_id))  # fmt: skip
    registry.record_event(build_event(job.job_id, 3, "progress"))
    extended = registry.get(job.job_id)
    assert extended.lease_until_ms is not None and extended.lease_until_ms > lease - 1000
    assert extended.lease_until is not None
    row = registry.db.conn.execute(
        "SELECT lease_until_ms FROM task_claims WHERE task_id = ?", (job.job_id,)
    ).fetchone()
    assert row[0] == extended.lease_until_ms
