"""Publish, poll, ack and follow on a real SQLite bus."""

from __future__ import annotations

import json
import stat
import threading
import time
from typing import Any

import pytest

from bus.blobs import INLINE_LIMIT
from bus.db import BusDB
from bus.messages import Bus, Message, Outgoing


def send(bus: Bus, type_: str = "status", **kw: object) -> int:
    return bus.publish(Outgoing(type=type_, from_agent=str(kw.pop("from_agent", "a")), **kw)).seq  # type: ignore[arg-type]


def test_publish_assigns_increasing_seq_and_poll_returns_decoded_payloads(bus: Bus) -> None:
    first = send(bus, payload={"progress": 0.5})
    second = send(bus, payload=[1, 2])
    assert second > first
    messages = bus.poll("reader")
    assert [m.payload for m in messages] == [{"progress": 0.5}, [1, 2]]
    assert all(m.payload_error is None for m in messages)


def test_publish_is_idempotent_on_message_id(bus: Bus) -> None:
    a = bus.publish(Outgoing(type="t", from_agent="a", payload=1, id="fixed"))
    b = bus.publish(Outgoing(type="t", from_agent="a", payload=2, id="fixed"))
    assert b.duplicate and not a.duplicate and a.seq == b.seq
    assert [m.payload for m in bus.poll("r")] == [1]


def test_poll_does_not_advance_and_ack_is_monotonic(bus: Bus) -> None:
    for i in range(3):
        send(bus, payload=i)
    assert len(bus.poll("r")) == 3
    assert len(bus.poll("r")) == 3  # still unacked
    bus.ack("r", 2)
    assert [m.payload for m in bus.poll("r")] == [2]
    assert bus.ack("r", 1) == 2  # never moves back
    assert [m.payload for m in bus.poll("r")] == [2]


def test_poll_sees_broadcasts_and_own_messages_only(bus: Bus) -> None:
    send(bus, payload="all")
    send(bus, payload="for-b", to_agent="b")
    send(bus, payload="for-c", to_agent="c")
    assert [m.payload for m in bus.poll("b")] == ["all", "for-b"]


def test_large_payload_goes_to_a_blob_and_comes_back(bus: Bus) -> None:
    big = {"text": "x" * (INLINE_LIMIT + 10)}
    send(bus, payload=big)
    row = bus.db.conn.execute("SELECT payload, payload_ref FROM messages").fetchone()
    assert row["payload"] is None and row["payload_ref"].startswith("sha256-")
    blob = bus.blobs.path_for(row["payload_ref"])
    assert stat.S_IMODE(blob.stat().st_mode) == 0o600
    assert bus.poll("r")[0].payload == big


def test_missing_blob_and_corrupt_payload_give_payload_error(bus: Bus) -> None:
    send(bus, payload={"text": "y" * (INLINE_LIMIT + 1)})
    ref = bus.db.conn.execute("SELECT payload_ref FROM messages").fetchone()[0]
    bus.blobs.path_for(ref).unlink()
    send(bus, payload={"ok": True})
    bus.db.conn.execute("UPDATE messages SET payload = '{not json' WHERE seq = 2")
    errors = [m.payload_error for m in bus.poll("r")]
    assert errors == ["blob_missing", "decode_failed"]


def test_an_edited_blob_is_corrupt_not_someone_elses_payload(bus: Bus) -> None:
    """A blob file that no longer hashes to its name (edited, damaged) is reported,
    even when what it now holds is valid JSON."""
    send(bus, payload={"text": "z" * (INLINE_LIMIT + 1)})
    ref = bus.db.conn.execute("SELECT payload_ref FROM messages").fetchone()[0]
    bus.blobs.path_for(ref).write_text('{"text": "not what was sent"}')
    (message,) = bus.poll("r")
    assert (message.payload, message.payload_error) == (None, "blob_corrupt")


def test_follow_starts_at_now_and_wakes_on_a_commit_from_another_connection(bus: Bus) -> None:
    """The follower's "now" is read before the other connection commits: the test waits
    for that read (an event set by it), not for a fixed time, so a slow thread start
    under load cannot put "new" before the follower's start."""
    send(bus, payload="old")
    got: list[object] = []
    stop = threading.Event()
    started = threading.Event()
    arrived = threading.Event()
    follower = Bus(BusDB(bus.db.state_dir))
    read_latest = follower.latest_seq

    def latest_seq() -> int:
        seq = read_latest()
        started.set()
        return seq

    follower.latest_seq = latest_seq  # type: ignore[method-assign]

    def run() -> None:
        for message in follower.follow(stop=stop.is_set):
            got.append(message.payload)
            arrived.set()

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(5), "the follower never read where 'now' is"
    other = Bus(BusDB(bus.db.state_dir))
    other.publish(Outgoing(type="t", from_agent="x", payload="new"))
    assert arrived.wait(5), "the follower did not wake on the other connection's commit"
    stop.set()
    thread.join(5)
    assert got == ["new"]


def test_follow_filters_by_task_and_can_start_at_a_seq(bus: Bus) -> None:
    send(bus, payload=1, correlation_id="job1")
    send(bus, payload=2, correlation_id="job2")
    send(bus, payload=3, from_agent="job1")
    seen = []
    for message in bus.follow(after_seq=0, task="job1"):
        seen.append(message.payload)
        if len(seen) == 2:
            break
    assert seen == [1, 3]


def test_follow_on_a_task_keeps_a_message_committed_while_it_reads(
    bus: Bus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process commits for the task just after a read that found nothing for it:
    the follower must still yield it, not skip past it to the newest seq."""
    send(bus, payload="noise", correlation_id="other")
    writer = Bus(BusDB(bus.db.state_dir))
    committed: list[int] = []
    read_after = bus.read_after

    def read_then_commit(after_seq: int, **kwargs: Any) -> list[Message]:
        batch = read_after(after_seq, **kwargs)
        if not batch and not committed:
            committed.append(send(writer, payload="mine", correlation_id="job1"))
        return batch

    monkeypatch.setattr(bus, "read_after", read_then_commit)
    deadline = time.monotonic() + 2
    seen = []
    for message in bus.follow(task="job1", stop=lambda: time.monotonic() > deadline):
        seen.append(message.seq)
        break
    assert committed and seen == committed


def test_to_dict_is_json_serialisable(bus: Bus) -> None:
    send(bus, payload={"a": "é"})
    line = json.dumps(bus.poll("r")[0].to_dict())
    assert json.loads(line)["payload"] == {"a": "é"}
