"""Heartbeats with liveness thresholds, and the crash-safe JSONL export."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from bus import heartbeats
from bus.db import now_ms
from bus.export import export_jsonl
from bus.heartbeats import HeartbeatThread, Liveness, classify
from bus.messages import Bus, Outgoing


def test_liveness_thresholds() -> None:
    assert classify(0) is Liveness.OK
    assert classify(29_999) is Liveness.OK
    assert classify(30_000) is Liveness.WARN
    assert classify(100_000) is Liveness.STALE
    assert classify(300_000) is Liveness.DEAD


def test_heartbeat_upserts_one_row_per_agent(bus: Bus) -> None:
    heartbeats.write(bus.db.conn, "a", "idle", ts_ms=now_ms() - 40_000)
    heartbeats.write(bus.db.conn, "b", "working", current_task="t1", progress=0.5)
    heartbeats.write(bus.db.conn, "b", "blocked", current_task="t1", progress=0.6)
    rows = {h.agent_id: h for h in heartbeats.read_all(bus.db.conn)}
    assert set(rows) == {"a", "b"}
    assert (rows["b"].status, rows["b"].progress) == ("blocked", 0.6)
    assert rows["a"].liveness() is Liveness.WARN and rows["b"].liveness() is Liveness.OK


def test_heartbeat_thread_beats_with_its_own_connection_and_stops(bus: Bus) -> None:
    with HeartbeatThread(bus.db.state_dir, "agent-x", interval=0.02) as beat:
        beat.update("working", current_task="job1", progress=0.25)
        deadline = time.monotonic() + 5
        while beat.beats < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    count = beat.beats
    # Proof that it stopped, rather than a look after a fixed pause: its thread is gone,
    # so no beat can follow.
    assert not [t for t in threading.enumerate() if t.name == "heartbeat-agent-x"]
    assert count >= 3 and beat.beats == count  # stopped
    row = heartbeats.read_all(bus.db.conn)[0]
    assert (row.agent_id, row.status, row.current_task) == ("agent-x", "working", "job1")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_appends_only_new_messages_and_is_idempotent(bus: Bus, tmp_path: Path) -> None:
    out = tmp_path / "export" / "bus.jsonl"
    for i in range(3):
        bus.publish(Outgoing(type="t", from_agent="a", payload=i))
    assert export_jsonl(bus, out) == 3
    assert export_jsonl(bus, out) == 0
    bus.publish(Outgoing(type="t", from_agent="a", payload=3))
    assert export_jsonl(bus, out) == 1
    assert [line["payload"] for line in _lines(out)] == [0, 1, 2, 3]
    assert oct(out.stat().st_mode & 0o777) == "0o600"


def test_export_tracks_seq_not_line_count_and_repairs_a_crash_tail(
    bus: Bus, tmp_path: Path
) -> None:
    out = tmp_path / "bus.jsonl"
    for i in range(2):
        bus.publish(Outgoing(type="t", from_agent="a", payload=i))
    bus.db.conn.execute("DELETE FROM messages WHERE seq = 1")  # a gap in seq
    export_jsonl(bus, out)
    # a crash after writing lines but before recording progress:
    with out.open("a") as handle:
        handle.write(json.dumps({"seq": 99, "payload": "phantom"}) + "\n" + '{"seq": 10')
    bus.publish(Outgoing(type="t", from_agent="a", payload=2))
    export_jsonl(bus, out)
    assert [line["payload"] for line in _lines(out)] == [1, 2]
