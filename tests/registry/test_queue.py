"""The seed 004 task queue client on a real SQLite file: claims, leases, crashes, nudges."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bus import claims
from bus.db import BusDB
from bus.errors import StaleClaim, TaskNotFound
from bus.messages import Bus
from registry import jobs as registry_jobs
from registry.errors import NoPendingJob
from registry.jobs import Registry
from registry.queue import QueueClient, Task, enqueue_task, nudge, requeue_expired
from registry.records import Job

SHORT_LEASE_MS = 300


@pytest.fixture
def bus(tmp_path: Path) -> Bus:
    return Bus(BusDB(tmp_path / "state"))


def claim_when_free(client: QueueClient, timeout: float = 10.0) -> Task:
    """Poll next_task with a deadline (a lease has to run out first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = client.next_task()
        if task is not None:
            return task
        time.sleep(0.02)
    raise AssertionError("no task became available in time")


def test_next_complete_is_fifo_and_idempotent(bus: Bus) -> None:
    for n in range(3):
        assert enqueue_task(bus, f"t{n}", {"n": n}, queue="q")
    assert not enqueue_task(bus, "t0", {"n": 99}, queue="q")  # task_id is the idempotency key
    client = QueueClient(bus, "worker", queue="q")
    first = client.next_task()
    assert first is not None and (first.task_id, first.payload) == ("t0", {"n": 0})
    assert client.complete_task("t0", {"ok": True}) is True
    assert client.complete_task("t0", {"ok": True}) is False  # a retried completion
    assert claims.get(bus.db.conn, "t0").result == '{"ok":true}'
    assert [client.next_task().task_id for _ in range(2)] == ["t1", "t2"]  # type: ignore[union-attr]
    assert client.next_task() is None
    assert QueueClient(bus, "other", queue="q").complete_task("t0") is False  # done: no-op
    with pytest.raises(StaleClaim):
        QueueClient(bus, "other", queue="q").complete_task("t1")  # held by "worker"
    with pytest.raises(TaskNotFound):
        client.complete_task("never-enqueued")


def test_heartbeat_renews_the_lease(bus: Bus) -> None:
    enqueue_task(bus, "t", queue="q")
    holder = QueueClient(bus, "holder", queue="q", lease_ms=5_000)
    rival = QueueClient(bus, "rival", queue="q", lease_ms=5_000)
    task = holder.next_task()
    assert task is not None
    time.sleep(0.01)
    renewed = holder.heartbeat("t")
    assert renewed.lease_until_ms > task.lease_until_ms
    assert claims.get(bus.db.conn, "t").lease_until_ms == renewed.lease_until_ms
    assert rival.next_task() is None
    with pytest.raises(StaleClaim):
        rival.heartbeat("t")
    assert holder.complete_task("t") is True


def test_stale_owner_cannot_complete(bus: Bus) -> None:
    """After the lease runs out and another worker claims it, the old owner is refused."""
    enqueue_task(bus, "t", queue="q")
    old = QueueClient(bus, "old", queue="q", lease_ms=SHORT_LEASE_MS)
    new = QueueClient(bus, "new", queue="q", lease_ms=60_000)
    assert old.next_task() is not None
    task = claim_when_free(new)
    assert (task.task_id, task.attempt) == ("t", 2)
    with pytest.raises(StaleClaim):
        old.complete_task("t", "late result")
    with pytest.raises(StaleClaim):
        old.heartbeat("t")
    assert new.complete_task("t", "result") is True
    assert claims.get(bus.db.conn, "t").result == '"result"'


def hold_a_task_forever(state_dir: str, claimed: Any) -> None:
    """Child process: claim one task with a short lease, report it, then hang."""
    client = QueueClient(Bus(BusDB(state_dir)), "doomed", queue="q", lease_ms=SHORT_LEASE_MS)
    task = client.next_task()
    claimed.put(None if task is None else task.task_id)
    time.sleep(120)


def test_killed_claimer_task_is_requeued_and_completed_once(bus: Bus) -> None:
    """SIGKILL a worker mid-task: the lease runs out, the sweeper re-enqueues it,
    another worker completes it exactly once, and the dead attempt can never land."""
    enqueue_task(bus, "crashy", {"work": 1}, queue="q")
    context = multiprocessing.get_context("spawn")
    claimed = context.Queue()
    child = context.Process(target=hold_a_task_forever, args=(str(bus.db.state_dir), claimed))
    child.start()
    try:
        assert claimed.get(timeout=30) == "crashy"
    finally:
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join(10)
    assert child.exitcode == -signal.SIGKILL
    assert claims.get(bus.db.conn, "crashy").state == "claimed"

    deadline = time.monotonic() + 10
    while not requeue_expired(bus, "q"):
        assert time.monotonic() < deadline, "the dead claim never expired"
        time.sleep(0.02)
    assert claims.get(bus.db.conn, "crashy").state == "pending"
    survivor = QueueClient(bus, "survivor", queue="q")
    task = survivor.next_task()
    assert task is not None and (task.task_id, task.attempt, task.payload) == (
        "crashy",
        2,
        {"work": 1},
    )
    assert survivor.complete_task("crashy", "done") is True
    assert survivor.complete_task("crashy", "done") is False
    dead_claim = claims.Claim("crashy", "q", "doomed", 1, 0, None)
    with pytest.raises(StaleClaim):
        claims.complete(bus.db.conn, dead_claim, "zombie")
    state = claims.get(bus.db.conn, "crashy")
    assert (state.state, state.claimed_by, state.result) == ("done", "survivor", '"done"')
    assert survivor.next_task() is None


def test_registry_backed_queue_moves_jobs(tmp_path: Path) -> None:
    """Over a Registry, tasks are jobs: next_task picks (running), complete_task completes."""
    registry = Registry.open(tmp_path / "state")
    job = registry.register("p", "a", "tmux:w", timeout_sec=1)
    client = QueueClient(registry, "tmux:w")
    task = client.next_task()
    assert task is not None and task.job is not None and task.task_id == job.job_id
    assert task.payload["prompt"] == "p" and registry.get(job.job_id).status == "running"
    assert client.heartbeat(job.job_id).lease_until_ms >= task.lease_until_ms

    # Let the 1 s lease lapse: the next pick sweeps it back and hands it out again.
    rival = QueueClient(registry, "tmux:w")
    again = claim_when_free(rival)
    assert (again.task_id, again.attempt) == (job.job_id, 2)
    assert registry.get(job.job_id).retry_count == 1
    with pytest.raises(StaleClaim):
        client.complete_task(job.job_id, {"summary": "late"})
    assert rival.complete_task(job.job_id, {"summary": "ok"}) is True
    assert rival.complete_task(job.job_id, {"summary": "ok"}) is False
    record = registry.get(job.job_id)
    assert (record.status, record.result) == ("completed", {"summary": "ok"})
    assert "retried 1\u00d7 after lease expiry" in registry.why(job.job_id)


def a_held_job(tmp_path: Path) -> tuple[Registry, Job, QueueClient, Task]:
    """A registry with one job that a queue worker on tmux:w has picked."""
    registry = Registry.open(tmp_path / "state")
    job = registry.register("p", "a", "tmux:w", timeout_sec=600)
    client = QueueClient(registry, "tmux:w")
    task = client.next_task()
    assert task is not None
    return registry, job, client, task


def test_a_released_job_goes_back_to_pending_and_is_picked_again(tmp_path: Path) -> None:
    """A worker shutting down gives its job back: pending at once, not running with
    nobody on it (the next pick used to settle its task and strand it)."""
    registry, job, client, task = a_held_job(tmp_path)
    client.release_task(task.task_id)
    assert registry.get(job.job_id).status == "pending"
    again = QueueClient(registry, "tmux:w").next_task()
    assert again is not None and (again.task_id, again.attempt) == (job.job_id, 2)
    assert registry.get(job.job_id).status == "running"
    assert "given back 1\u00d7 by its worker" in registry.why(job.job_id)


def test_a_lease_ending_between_sweep_and_claim_is_picked_not_stranded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pick sweeps expired leases, then claims: with a clock that moves on between
    the two, a lease ending in between was claimed unswept and its job stranded in
    running. Judged at one moment, the job is either still held or re-queued."""
    registry = Registry.open(tmp_path / "state")
    job = registry.register("p", "a", "tmux:w", timeout_sec=1)
    registry.pick("tmux:w")
    lease_end = claims.get(registry.db.conn, job.job_id).lease_until_ms
    clock = itertools.count(lease_end - 1)  # every reading 1 ms after the last
    monkeypatch.setattr(claims, "now_ms", lambda: next(clock))
    monkeypatch.setattr(registry_jobs, "now_ms", lambda: next(clock))
    with pytest.raises(NoPendingJob):
        registry.pick("tmux:w")  # at lease_end - 1 the lease still holds
    assert claims.get(registry.db.conn, job.job_id).state == "claimed"
    picked, claim = registry.pick_claim("tmux:w")  # the clock has moved past it
    assert (picked.job_id, picked.status, picked.retry_count) == (job.job_id, "running", 1)
    assert claim.attempt == 2


def test_completing_a_job_cancelled_meanwhile_is_refused_not_taken_as_done(
    tmp_path: Path,
) -> None:
    """The operator cancels while a worker holds the job: the worker's completion is
    refused (its result is dropped), not reported as a completion that landed."""
    for ended in ("cancelled", "error"):  # by the operator, by the control room
        registry, job, client, task = a_held_job(tmp_path / ended)
        if ended == "cancelled":
            registry.cancel(job.job_id)
        else:
            registry.set_status(job.job_id, "error", "agent pane exited with status 127")
        with pytest.raises(StaleClaim, match=f"is {ended}, not completed"):
            client.complete_task(task.task_id, {"summary": "late"})
        record = registry.get(job.job_id)
        assert (record.status, record.result) == (ended, None)


def test_nudge_wakes_a_waiting_worker(bus: Bus) -> None:
    client = QueueClient(bus, "w", queue="q")
    assert client.wait_for_nudge(0.05) is False
    nudge(bus, "other-queue")
    assert client.wait_for_nudge(0.05) is False  # not ours
    timer = threading.Timer(
        0.05, lambda: enqueue_task(Bus(BusDB(bus.db.state_dir)), "t", queue="q")
    )
    timer.start()
    try:
        assert client.wait_for_nudge(10) is True
    finally:
        timer.join()
    task = client.next_task()
    assert task is not None and task.task_id == "t"
    messages = [m for m in bus.read_after(0) if m.type == "queue.nudge"]
    assert [m.payload["queue"] for m in messages] == ["other-queue", "q"]
    assert messages[1].to_agent == "q"


def test_registering_a_job_wakes_its_session(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path / "state")
    client = QueueClient(registry, "tmux:x")
    registry.register("p", "a", "tmux:y")
    assert client.wait_for_nudge(0.05) is False
    registry.register("p", "a", "tmux:x")
    assert client.wait_for_nudge(5) is True
