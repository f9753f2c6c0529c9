"""One receiver per state dir, handed over: two slots (each with its own lock handle,
as two processes would have) on one state dir, real sockets, the real hook client."""

from __future__ import annotations

import socket
from pathlib import Path

from app.hookrx import client
from app.hookrx.slot import LOCK_NAME, ReceiverSlot, serving
from registry.jobs import Registry
from tests.hookrx.test_receiver import SAMPLES, SYSTEM_PYTHON, new_job, run_client, state
from tests.polling import poll_until

__all__ = ["state"]  # the fixture, shared


def recorded_activity(state: Path, job_id: str) -> str:
    registry = Registry.open(state)
    try:
        return str(registry.get(job_id).activity)
    finally:
        registry.db.close()


def test_the_second_slot_stands_by_then_takes_over(state: Path) -> None:
    """Never two listeners: the second slot listens only once the first has closed,
    and hooks are recorded through whichever listens."""
    first, second = ReceiverSlot(state, retry_sec=0.05), ReceiverSlot(state, retry_sec=0.05)
    first.start()
    second.start()
    try:
        assert first.receiver is not None and second.receiver is None
        path = Path(client.socket_path(str(state)))
        job_id = new_job(state)
        result = run_client(state, job_id, SAMPLES["PreToolUse"], python=SYSTEM_PYTHON)
        assert result.returncode == 0 and recorded_activity(state, job_id) == "working"
        assert sum(first.receiver.recorder.batches) == 1
        assert second.receiver is None  # still standing by
        first.close()
        poll_until(lambda: second.receiver is not None, what="the second slot to take over")
        assert second.receiver is not None and path.is_socket()
        result = run_client(state, job_id, SAMPLES["Stop"], python=SYSTEM_PYTHON)
        assert result.returncode == 0 and recorded_activity(state, job_id) == "idle"
        assert sum(second.receiver.recorder.batches) == 1
    finally:
        first.close()
        second.close()
    assert not path.exists()


def test_serving_is_now_or_never(state: Path) -> None:
    """`serving` (tests, the bench) does not stand by: with another receiver it yields
    None and says why, and never takes over later."""
    lines: list[str] = []
    holder = ReceiverSlot(state)
    holder.start()
    try:
        with serving(state, lines.append) as receiver:
            assert receiver is None
            assert lines == ["hook receiver off: another process receives this state dir's hooks"]
    finally:
        holder.close()
    with serving(state, lines.append) as receiver:
        assert receiver is not None


def test_a_dead_receivers_socket_file_is_replaced(state: Path) -> None:
    """A receiver killed outright leaves its socket file (the kernel drops its lock).
    Nobody listens on it, so a client falls back (here: the full path records); the
    next slot removes it and listens."""
    path = Path(client.socket_path(str(state)))
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays, with no listener
    assert path.is_socket()
    job_id = new_job(state)
    assert run_client(state, job_id, SAMPLES["PreToolUse"]).returncode == 0  # full path
    assert recorded_activity(state, job_id) == "working"
    slot = ReceiverSlot(state)
    slot.start()
    try:
        assert slot.receiver is not None
        result = run_client(state, job_id, SAMPLES["Stop"], python=SYSTEM_PYTHON)
        assert result.returncode == 0 and recorded_activity(state, job_id) == "idle"
    finally:
        slot.close()
    assert not path.exists()
    assert (state / LOCK_NAME).exists()  # the lock file stays; its lock went with close
