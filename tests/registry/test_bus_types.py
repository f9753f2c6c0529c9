"""The registry's bus types are reserved, and bus job events are believed only when verified."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bus.messages import Outgoing
from registry.bus_types import check_sendable, is_reserved_type, send
from registry.errors import EventRejected, ReservedMessage
from registry.events import build_event
from registry.job_outcome import JobWaiter, wait_on_bus
from registry.jobs import Registry
from registry.queue import nudge
from registry.sessions import SessionStore
from registry.signing import sign


def test_every_type_the_registry_writes_is_reserved(tmp_path: Path) -> None:
    """Walk a job and a session through their lives, nudge a queue, then look at
    every type on the bus: none of them may be sent by anyone else."""
    registry = Registry.open(tmp_path)
    job = registry.register(prompt="p", agent="a", agent_session="s")
    registry.pick("s")
    registry.publish(job.job_id, "started")
    registry.publish(job.job_id, "error", "failed")
    registry.resume(job.job_id)
    registry.cancel(job.job_id)
    sessions = SessionStore(registry.bus)
    sessions.create("s1", "demo", tmux_session="s1")
    sessions.stop("s1")
    nudge(registry.bus, "s")
    with sqlite3.connect(tmp_path / "state.db") as conn:
        written = {row[0] for row in conn.execute("SELECT DISTINCT type FROM messages")}
    assert {"job.registered", "job.status", "job.event", "session.status", "queue.nudge"} <= written
    assert all(is_reserved_type(kind) for kind in written), written


def test_a_senders_message_goes_when_it_is_its_own(tmp_path: Path) -> None:
    bus = Registry.open(tmp_path).bus
    before = bus.latest_seq()
    with pytest.raises(ReservedMessage, match="reserved"):
        send(bus, Outgoing(type="job.event", from_agent="w"))
    with pytest.raises(ReservedMessage, match="id 'abcd1234:7' is reserved"):
        check_sendable(Outgoing(type="chat", from_agent="w", id="abcd1234:7"))
    assert bus.latest_seq() == before
    assert send(bus, Outgoing(type="chat", from_agent="w", id="my-own-id")).seq == before + 1


def test_an_event_whose_bus_id_was_taken_is_refused_not_called_a_duplicate(
    tmp_path: Path,
) -> None:
    """A database from before ids were reserved may hold a sender's message under
    "<job>:1": the job's seq 1 is refused saying so, not as a duplicate it is not."""
    registry = Registry.open(tmp_path)
    job = registry.register(prompt="p", agent="a", agent_session="s")
    registry.bus.publish(Outgoing(type="chat", from_agent="w", id=f"{job.job_id}:1"))
    with pytest.raises(EventRejected, match="held by a 'chat' message"):
        registry.publish(job.job_id, "started")


def test_submits_wait_drops_forged_bus_events(tmp_path: Path) -> None:
    """`submit` waits with ``wait_on_bus``: an unsigned `job.event`, one signed with
    another token and one filed under another job do not end its wait."""
    registry = Registry.open(tmp_path)
    job = registry.register(prompt="p", agent="a", agent_session="s")
    other = registry.register(prompt="p", agent="a", agent_session="s")
    assert job.auth_token and other.auth_token
    after = registry.bus.latest_seq()
    forged = [
        (job.job_id, build_event(job.job_id, 1, "completed", "unsigned")),
        (job.job_id, sign(build_event(job.job_id, 1, "completed", "x"), "not-the-token")),
        (job.job_id, sign(build_event(other.job_id, 1, "completed"), other.auth_token)),
    ]
    for n, (filed_under, event) in enumerate(forged):
        registry.bus.publish(
            Outgoing(type="job.event", from_agent=filed_under, payload=event.to_dict(),
                     correlation_id=filed_under, id=f"forged-{n}")
        )  # fmt: skip
    registry.publish(job.job_id, "error", "the real end")
    seen: list[str] = []
    waiter = JobWaiter([job.job_id], timeout_sec=20, idle_timeout_sec=20)
    wait_on_bus(registry.bus, waiter, after_seq=after, on_event=lambda e, v: seen.append(e.detail))
    assert seen == ["the real end"]
    assert waiter.exit_code == 1


def test_a_review_move_cannot_be_forged(tmp_path: Path) -> None:
    """review.status says a work-tree job's review moved (approved, merged): a
    sender's message of that type, or a look-alike, is refused like job.*."""
    bus = Registry.open(tmp_path).bus
    before = bus.latest_seq()
    for kind in ("review.status", " Review.Status", "review.anything"):
        with pytest.raises(ReservedMessage, match="reserved"):
            send(bus, Outgoing(type=kind, from_agent="w"))
    assert bus.latest_seq() == before
