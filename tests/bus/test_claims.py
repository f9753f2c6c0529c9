"""Task claims with leases, including two processes claiming at once."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from bus import claims
from bus.db import BusDB, connect, now_ms
from bus.errors import StaleClaim
from tests.polling import poll_until


@pytest.fixture
def db(tmp_path: Path) -> BusDB:
    return BusDB(tmp_path)


def test_claim_next_is_fifo_and_exclusive(db: BusDB) -> None:
    for i in range(3):
        claims.enqueue(db.conn, f"t{i}", at_ms=1000 + i)
    got = [claims.claim_next(db.conn, "default", "w") for _ in range(4)]
    assert [c.task_id if c else None for c in got] == ["t0", "t1", "t2", None]


def test_queues_partition_tasks(db: BusDB) -> None:
    claims.enqueue(db.conn, "a1", queue="a")
    claims.enqueue(db.conn, "b1", queue="b")
    claim = claims.claim_next(db.conn, "b", "w")
    assert claim is not None and claim.task_id == "b1"
    assert claims.claim_next(db.conn, "b", "w") is None


def test_enqueue_is_idempotent(db: BusDB) -> None:
    assert claims.enqueue(db.conn, "t")
    assert not claims.enqueue(db.conn, "t")


def test_expired_lease_is_reclaimed_and_the_stale_owner_cannot_complete(db: BusDB) -> None:
    claims.enqueue(db.conn, "t")
    start = now_ms()
    first = claims.claim_next(db.conn, "default", "slow", lease_ms=50, at_ms=start)
    assert first is not None and first.attempt == 1
    # Judged 1 ms before the lease ends, not "on the next statement", which a loaded
    # machine can delay past 50 ms.
    assert claims.claim_next(db.conn, "default", "fast", at_ms=start + 49) is None
    assert claims.expired(db.conn, at_ms=start + 49) == []
    poll_until(lambda: claims.expired(db.conn), timeout=5, what="the 50 ms lease to run out")
    assert [t.task_id for t in claims.expired(db.conn)] == ["t"]
    second = claims.claim_next(db.conn, "default", "fast")
    assert second is not None and second.attempt == 2
    with pytest.raises(StaleClaim, match="no longer current"):
        claims.complete(db.conn, first, {"by": "slow"})
    with pytest.raises(StaleClaim):
        claims.renew(db.conn, first)
    assert claims.complete(db.conn, second, {"by": "fast"}) is True
    assert claims.complete(db.conn, second, {"by": "fast"}) is False  # idempotent retry
    state = claims.get(db.conn, "t")
    assert (state.state, state.claimed_by, state.attempts) == ("done", "fast", 2)
    assert state.result == '{"by":"fast"}'


def test_renew_keeps_the_claim_alive(db: BusDB) -> None:
    claims.enqueue(db.conn, "t")
    claim = claims.claim_next(db.conn, "default", "w", lease_ms=60)
    assert claim is not None
    first_end = claim.lease_until_ms
    claim = claims.renew(db.conn, claim, lease_ms=60_000)
    assert claim.lease_until_ms > first_end
    # Past the first lease's end (real time, a deadline rather than a fixed sleep), the
    # renewed lease alone keeps the task from another claimant.
    poll_until(lambda: now_ms() > first_end, timeout=5, what="the first lease to end")
    assert claims.claim_next(db.conn, "default", "other") is None


def test_release_makes_the_task_claimable_again(db: BusDB) -> None:
    claims.enqueue(db.conn, "t")
    claim = claims.claim_next(db.conn, "default", "w")
    assert claim is not None
    claims.release(db.conn, claim)
    again = claims.claim_next(db.conn, "default", "w2")
    assert again is not None and again.attempt == 2


def test_try_claim_a_specific_task_respects_a_live_lease(db: BusDB) -> None:
    assert claims.try_claim(db.conn, "x", "a") is not None
    assert claims.try_claim(db.conn, "x", "b") is None


def _worker(state_dir: str, name: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    db = BusDB(Path(state_dir))
    done = []
    while (claim := claims.claim_next(db.conn, "default", name)) is not None:
        if claims.complete(db.conn, claim, name):
            done.append(claim.task_id)
    out.put(done)


def test_two_processes_claiming_concurrently_never_share_a_task(tmp_path: Path) -> None:
    conn = connect(tmp_path / "state.db")
    conn.execute("BEGIN")
    for i in range(400):
        conn.execute(
            "INSERT INTO task_claims (task_id, lease_until_ms, created_at_ms) VALUES (?, ?, ?)",
            (f"t{i:04d}", i, i),
        )
    conn.execute("COMMIT")
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_worker, args=(str(tmp_path), f"w{n}", out)) for n in range(2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(10)
    everything = [t for r in results for t in r]
    assert len(everything) == 400 and len(set(everything)) == 400
    assert conn.execute("SELECT count(*) FROM task_claims WHERE state='done'").fetchone()[0] == 400
    assert conn.execute("SELECT max(attempts) FROM task_claims").fetchone()[0] == 1
