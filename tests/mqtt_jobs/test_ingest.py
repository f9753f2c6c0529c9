"""The ingest bridge over a real Mosquitto: remote agents' MQTT events land in the bus once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
from pathlib import Path

from bus.delivery_sender import OutboxFlusher, deliver
from bus.errors import MqttError
from bus.mqtt import MqttPublisher, publish_once
from registry.delivery import AgentOutbox, applied_topic
from registry.events import Event, build_event
from registry.ingest import IngestBridge
from registry.jobs import Registry
from registry.signing import sign
from tests.mqtt_jobs.conftest import BridgeThread, raw_publish
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until as wait_for


def remote_job(state_dir: Path, broker: RunningBroker) -> tuple[str, str]:
    """A job registered on the control host; the agent elsewhere knows only id and token."""
    job = Registry.open(state_dir).register(
        "sort the list", "demo", "tmux:demo", broker={"host": "127.0.0.1", "port": broker.port}
    )
    assert job.auth_token
    return job.job_id, job.auth_token


def agent_events(job_id: str, token: str, count: int) -> list[Event]:
    """started, progress..., completed: what a remote agent signs and publishes."""
    names = ["started"] + ["progress"] * (count - 2) + ["completed"]
    return [
        sign(build_event(job_id, seq, name, f"step {seq}"), token)
        for seq, name in enumerate(names, start=1)
    ]


def bus_event_seqs(state_dir: Path, job_id: str) -> list[int]:
    """Seqs of the job's `job.event` rows, read from another connection, in bus order."""
    with sqlite3.connect(state_dir / "state.db") as conn:
        rows = conn.execute(
            "SELECT id FROM messages WHERE type = 'job.event' AND correlation_id = ? ORDER BY seq",
            (job_id,),
        ).fetchall()
    return [int(row[0].split(":")[1]) for row in rows]


def moves(state_dir: Path, job_id: str) -> list[tuple[str | None, str]]:
    return [(c.from_state, c.to_state) for c in Registry.open(state_dir).history(job_id)]


def test_remote_events_land_in_the_bus_exactly_once(broker, state_dir, run_bridge) -> None:  # type: ignore[no-untyped-def]
    """Events straight from MQTT (no local publish) are recorded once each: retried
    duplicates absorbed, a forged copy refused, the job moved pending->running->completed,
    and each shows as `received` via mqtt in the audit log."""
    job_id, token = remote_job(state_dir, broker)
    running = run_bridge(broker)
    events = agent_events(job_id, token, 6)
    topic = f"jobs/{job_id}/events"
    forged = sign(build_event(job_id, 4, "error", "forged"), "guessed-token-123")
    for event in [*events[:3], events[1], forged, *events[3:], events[2]]:
        raw_publish(broker, topic, event.to_bytes(), retain=event.is_terminal)
    assert wait_for(lambda: running.bridge.stats.received == 9)
    running.stop()
    assert bus_event_seqs(state_dir, job_id) == [1, 2, 3, 4, 5, 6]
    assert moves(state_dir, job_id) == [(None, "pending"), ("pending", "running"),
                                        ("running", "completed")]  # fmt: skip
    stats = running.bridge.stats
    assert (stats.recorded, stats.duplicates, stats.refused) == (6, 2, 1)
    audit = Registry.open(state_dir).audit
    received = [e for e in audit.iter_events(job_id) if e["kind"] == "received"]
    assert [e["event"]["seq"] for e in received] == [1, 2, 3, 4, 5, 6]
    assert {e["source"] for e in received} == {"mqtt"}


def test_no_event_lost_or_applied_twice_across_a_broker_crash(
    broker, state_dir, run_bridge, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL the broker mid-stream and restart it while a remote agent keeps publishing
    as `orchestrate publish` does on its own host (each event kept in its outbox before
    it is sent, sent again until the control room confirms it): every event is in the
    bus exactly once and the job's status moved once. A PUBACK alone would not do: the
    broker acknowledges before it has passed the event on or saved it."""
    job_id, token = remote_job(state_dir, broker)
    running = run_bridge(broker, reconnect_max_s=1)
    # The broker saved its state at some autosave after the bridge subscribed
    # (SIGUSR1 forces that save now), so the bridge's session survives the crash.
    assert broker.process.proc is not None
    os.kill(broker.process.proc.pid, signal.SIGUSR1)
    events = agent_events(job_id, token, 200)
    topic = f"jobs/{job_id}/events"

    def agent() -> None:
        config = broker.config()
        box = AgentOutbox(tmp_path / "agent-host")  # its database is this thread's
        for event in events:  # one delivery per event, as `orchestrate publish` does
            queued = box.queue(job_id, topic, config.url, lambda seq, e=event: e)
            try:
                deliver(config, queued, applied_topic(topic), confirm_wait=0, attempts=2,
                        backoff_base=0.02)  # fmt: skip
                box.outbox.mark_sent([queued])
            except MqttError:  # the broker is down: the outbox keeps it
                pass
        flusher = OutboxFlusher(box.outbox, config, idle_exit_s=0.5, resend_after_s=2)
        flusher.run(threading.Event())  # until the control room confirmed everything

    publisher = threading.Thread(target=agent, daemon=True)
    publisher.start()
    assert wait_for(lambda: running.bridge.stats.recorded >= 60)
    broker.kill()
    assert wait_for(lambda: running.bridge.state == "reconnecting")
    broker.start()
    publisher.join(60)
    assert not publisher.is_alive()
    assert wait_for(lambda: Registry.open(state_dir).get(job_id).status == "completed", 20)
    assert running.bridge.state == "connected"
    running.stop()
    # exactly once each; one sent again after the crash lands after those sent later
    assert sorted(bus_event_seqs(state_dir, job_id)) == list(range(1, 201))
    assert moves(state_dir, job_id) == [(None, "pending"), ("pending", "running"),
                                        ("running", "completed")]  # fmt: skip
    assert Registry.open(state_dir).get(job_id).missing_count == 0


def test_a_locked_database_is_retried_before_acking(broker, state_dir, run_bridge) -> None:  # type: ignore[no-untyped-def]
    """The database locked by another writer: the event is not acked, retried, and
    committed once the lock goes, before any later event."""
    job_id, token = remote_job(state_dir, broker)
    running = run_bridge(broker, busy_timeout_ms=20, retry_base_s=0.02, retry_cap_s=0.1)
    first, second = agent_events(job_id, token, 2)
    blocker = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # hold the write lock
    try:
        publish_once(broker.config(), f"jobs/{job_id}/events", first.to_bytes())
        publish_once(broker.config(), f"jobs/{job_id}/events", second.to_bytes(), retain=True)
        assert wait_for(lambda: running.bridge.stats.retries >= 2)
        assert running.bridge.stats.recorded == 0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert wait_for(lambda: running.bridge.stats.recorded == 2)
    assert bus_event_seqs(state_dir, job_id) == [1, 2]


def test_an_event_not_committed_is_redelivered_to_the_next_run(
    broker, state_dir, run_bridge
) -> None:  # type: ignore[no-untyped-def]
    """The bridge stops while an event cannot be committed: it was never acked, so
    the broker delivers it again to the next bridge run, which records it once."""
    job_id, token = remote_job(state_dir, broker)
    first = run_bridge(broker, busy_timeout_ms=20, retry_base_s=0.02, retry_cap_s=0.1)
    [event, _] = agent_events(job_id, token, 2)
    blocker = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        publish_once(broker.config(), f"jobs/{job_id}/events", event.to_bytes())
        assert wait_for(lambda: first.bridge.stats.retries >= 1)
        first.stop()  # a crash between receipt and commit, as far as the broker knows
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert bus_event_seqs(state_dir, job_id) == []
    second = run_bridge(broker)
    assert second.bridge.client_id == first.bridge.client_id  # the same session
    assert wait_for(lambda: second.bridge.stats.recorded == 1)
    assert bus_event_seqs(state_dir, job_id) == [1]
    assert Registry.open(state_dir).get(job_id).status == "running"


def test_events_published_while_the_bridge_is_down_arrive_later(
    broker, state_dir, run_bridge
) -> None:  # type: ignore[no-untyped-def]
    """The bridge's session is persistent: events sent while it was stopped wait at
    the broker and are recorded when it comes back."""
    job_id, token = remote_job(state_dir, broker)
    run_bridge(broker).stop()  # creates the session
    with MqttPublisher(broker.config()) as pub:
        for event in agent_events(job_id, token, 50):
            pub.publish(f"jobs/{job_id}/events", event.to_bytes(), wait=False)
        pub.flush()
    running = run_bridge(broker)
    assert wait_for(lambda: running.bridge.stats.recorded == 50)
    assert bus_event_seqs(state_dir, job_id) == list(range(1, 51))


def test_ingest_command(broker, cli, spawn, state_dir) -> None:  # type: ignore[no-untyped-def]
    """`orchestrate ingest` prints one JSON line per committed event and stops cleanly
    on SIGTERM; a second one on the same state dir says it waits; with no broker
    configured it says so in one line and exits 1."""
    refused = cli("ingest")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "no MQTT broker configured" in refused.stderr
    job_id, token = remote_job(state_dir, broker)
    bridge = spawn("ingest", env={"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(broker.port)})
    bridge.wait_stderr(f"ingesting jobs/+/events from mqtt://127.0.0.1:{broker.port}")
    for event in agent_events(job_id, token, 3):
        raw_publish(broker, f"jobs/{job_id}/events", event.to_bytes(), retain=event.is_terminal)
    assert wait_for(lambda: len(bridge.stdout) == 3)
    second = spawn("ingest", env={"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(broker.port)})
    second.wait_stderr("already ingests into")  # and waits, rather than take the session
    second.proc.send_signal(signal.SIGTERM)
    assert second.wait() == 0 and "0 recorded" in second.stderr[-1]
    bridge.proc.send_signal(signal.SIGTERM)
    assert bridge.wait() == 0, bridge.stderr
    lines = [json.loads(line) for line in bridge.stdout]
    assert [(e["seq"], e["status"]) for e in lines] == [(1, "running"), (2, "running"),
                                                        (3, "completed")]  # fmt: skip
    assert "3 recorded" in bridge.stderr[-1]
    logs = cli("job", "logs", job_id, "--json").stdout.splitlines()
    assert sum(json.loads(line)["kind"] == "received" for line in logs) == 3


def test_two_control_rooms_on_one_state_dir_take_turns(broker, state_dir, run_bridge) -> None:  # type: ignore[no-untyped-def]
    """Two `orchestrate watch` on one state dir each run a bridge with the same client
    id. One ingests; the other waits (never kicking it off the broker), and takes
    over when the first stops. Every event lands once."""
    job_id, token = remote_job(state_dir, broker)
    first = run_bridge(broker)
    second = IngestBridge(state_dir, broker.config())
    second_thread = BridgeThread(second)
    second_thread.thread.start()
    assert wait_for(lambda: second.state == "standby", 15)
    events = agent_events(job_id, token, 6)
    topic = f"jobs/{job_id}/events"
    for event in events[:3]:
        raw_publish(broker, topic, event.to_bytes())
    assert wait_for(lambda: first.bridge.stats.recorded == 3)
    assert first.bridge._subscriber._connection == 1  # never taken over
    first.stop()
    assert wait_for(lambda: second.state == "connected", 15)
    for event in events[3:]:
        raw_publish(broker, topic, event.to_bytes(), retain=event.is_terminal)
    assert wait_for(lambda: second.stats.recorded == 3)
    second_thread.stop()
    assert bus_event_seqs(state_dir, job_id) == [1, 2, 3, 4, 5, 6]
