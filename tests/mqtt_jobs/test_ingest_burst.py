"""The ingest bridge's group commit under a burst: each event stored once, every message acked."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from registry.events import Event, build_event
from registry.ingest import IngestBridge
from registry.jobs import Recorded, Registry
from registry.signing import sign
from tests.mqtt_jobs.test_ingest import BridgeThread, agent_events, bus_event_seqs, moves
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until as wait_for

BURST = 400


def burst(broker: RunningBroker, topic: str, events: list[Event]) -> None:
    """Publish every event at once with bare paho (no waiting between them)."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.max_inflight_messages_set(len(events))
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        infos = [client.publish(topic, event.to_bytes(), qos=1) for event in events]
        for info in infos:
            info.wait_for_publish(15)
    finally:
        client.disconnect()
        client.loop_stop()


@pytest.fixture
def bridges(state_dir: Path) -> Iterator[list[BridgeThread]]:
    """Bridges a test starts (stopped at the end if still running)."""
    running: list[BridgeThread] = []
    yield running
    for bridge in running:
        if bridge.thread.is_alive():
            bridge.stop()


def start(bridges: list[BridgeThread], state_dir: Path, broker: RunningBroker,
          **kwargs: object) -> BridgeThread:  # fmt: skip
    bridge = IngestBridge(state_dir, broker.config(), **kwargs)  # type: ignore[arg-type]
    bridges.append(BridgeThread(bridge).start())
    return bridges[-1]


def test_a_burst_is_stored_once_in_order_and_acked(
    broker: RunningBroker, state_dir: Path, bridges: list[BridgeThread]
) -> None:
    """Hundreds of events published at once (the bridge commits them in groups),
    then the same burst again: each event is in the bus once, in order, the job
    moved pending->running->completed once, the hook saw each recorded event, and
    nothing comes back to the next run of the bridge (everything was acked)."""
    job = Registry.open(state_dir).register(
        "burst", "demo", "tmux:demo", broker={"host": "127.0.0.1", "port": broker.port}
    )
    assert job.auth_token is not None
    seen: list[Recorded] = []
    running = start(bridges, state_dir, broker, on_recorded=seen.append)
    events = agent_events(job.job_id, job.auth_token, BURST)
    topic = f"jobs/{job.job_id}/events"
    burst(broker, topic, events)
    assert wait_for(lambda: running.bridge.stats.recorded == BURST, 30)
    burst(broker, topic, events)  # every one a duplicate now
    assert wait_for(lambda: running.bridge.stats.duplicates == BURST, 30)
    running.stop()

    stats = running.bridge.stats
    assert 1 <= stats.commits <= stats.received  # grouped: usually far fewer
    assert (stats.received, stats.recorded, stats.refused, stats.retries) == (
        2 * BURST,
        BURST,
        0,
        0,
    )
    assert bus_event_seqs(state_dir, job.job_id) == list(range(1, BURST + 1))
    assert [r.seq for r in seen] == list(range(1, BURST + 1))
    assert seen[-1].status == "completed"
    assert moves(state_dir, job.job_id) == [(None, "pending"), ("pending", "running"),
                                            ("running", "completed")]  # fmt: skip
    with sqlite3.connect(state_dir / "state.db") as conn:
        [(count,)] = conn.execute("SELECT COUNT(*) FROM messages WHERE type = 'job.event'")
    assert count == BURST

    # The same session again: an unacked message would be redelivered before the
    # sentinel (another job's first event) published now.
    other = Registry.open(state_dir).register("x", "demo", "tmux:demo", sign_events=False)
    again = start(bridges, state_dir, broker)
    assert again.bridge.client_id == running.bridge.client_id
    burst(broker, f"jobs/{other.job_id}/events", [build_event(other.job_id, 1, "started")])
    assert wait_for(lambda: again.bridge.stats.recorded == 1, 15)
    again.stop()
    assert again.bridge.stats.received == 1


def test_refused_events_in_a_burst_do_not_undo_the_good_ones(
    broker: RunningBroker, state_dir: Path, bridges: list[BridgeThread]
) -> None:
    """Forged and unknown-job events interleaved with good ones in one burst:
    refused (and acked) one by one, the good ones all stored."""
    job = Registry.open(state_dir).register(
        "mix", "demo", "tmux:demo", broker={"host": "127.0.0.1", "port": broker.port}
    )
    assert job.auth_token is not None
    running = start(bridges, state_dir, broker, batch_max=50)
    good = agent_events(job.job_id, job.auth_token, 120)
    mixed: list[Event] = []
    for event in good:
        mixed.append(event)
        if event.seq % 10 == 0:
            mixed.append(sign(build_event(job.job_id, event.seq + 1, "error"), "forged-key-123"))
            mixed.append(build_event("0badf00d", event.seq, "progress"))
    burst(broker, f"jobs/{job.job_id}/events", mixed)
    assert wait_for(lambda: running.bridge.stats.received == len(mixed), 30)
    running.stop()
    stats = running.bridge.stats
    assert (stats.recorded, stats.refused, stats.duplicates) == (120, 24, 0)
    assert bus_event_seqs(state_dir, job.job_id) == list(range(1, 121))
    assert Registry.open(state_dir).get(job.job_id).status == "completed"


def test_batch_max_must_be_positive(broker: RunningBroker, state_dir: Path) -> None:
    with pytest.raises(ValueError, match="batch_max"):
        IngestBridge(state_dir, broker.config(), batch_max=0)
