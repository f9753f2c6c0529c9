"""An event's job comes from its topic (issue 19, item 3), over a real Mosquitto.

An event signed for job A but published on job B's topic used to be applied.
The broker's ACL decides who may write each topic, so a job's events count
only on that job's own topic: elsewhere they are dropped with a logged reason,
by the ingest bridge and by `subscribe` alike.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from registry.events import build_event
from registry.jobs import Registry
from registry.signing import sign
from tests.mqtt_jobs.conftest import raw_publish
from tests.mqtt_jobs.test_ingest import bus_event_seqs, remote_job
from tests.mqtt_jobs.test_subscribe import events, publish, register
from tests.polling import poll_until as wait_for


def test_ingest_drops_an_event_on_another_jobs_topic(  # type: ignore[no-untyped-def]
    broker, state_dir: Path, run_bridge, caplog: pytest.LogCaptureFixture
) -> None:
    """Job A's signed events on B's topic are refused (and acked: they never will
    be good), not recorded for A; the same events on A's topic are."""
    job_a, token_a = remote_job(state_dir, broker)
    job_b, _token_b = remote_job(state_dir, broker)
    running = run_bridge(broker)
    started = sign(build_event(job_a, 1, "started"), token_a)
    completed = sign(build_event(job_a, 2, "completed"), token_a)
    with caplog.at_level(logging.WARNING, logger="registry.ingest"):
        raw_publish(broker, f"jobs/{job_b}/events", started.to_bytes())
        raw_publish(broker, f"jobs/{job_b}/events", completed.to_bytes(), retain=True)
        assert wait_for(lambda: running.bridge.stats.refused == 2)
        assert bus_event_seqs(state_dir, job_a) == [] == bus_event_seqs(state_dir, job_b)
        assert Registry.open(state_dir).get(job_a).status == "pending"
        raw_publish(broker, f"jobs/{job_a}/events", started.to_bytes())
        raw_publish(broker, f"jobs/{job_a}/events", completed.to_bytes(), retain=True)
        assert wait_for(lambda: running.bridge.stats.recorded == 2)
    running.stop()
    assert bus_event_seqs(state_dir, job_a) == [1, 2]
    assert Registry.open(state_dir).get(job_a).status == "completed"
    assert Registry.open(state_dir).get(job_b).status == "pending"
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 2, refusals
    expected = f"arrived on jobs/{job_b}/events, not on its own topic jobs/{job_a}/events"
    assert all(expected in line for line in refusals), refusals


def test_ingest_binds_a_custom_topic_prefix(  # type: ignore[no-untyped-def]
    broker, state_dir: Path, run_bridge
) -> None:
    """A job registered with its own prefix is bound to that topic: its events on
    the default jobs/<id>/events topic are refused."""
    registry = Registry.open(state_dir)
    job = registry.register(
        "p", "demo", "tmux:demo", broker={"host": "127.0.0.1", "port": broker.port},
        topic_prefix="team/x",
    )  # fmt: skip
    assert job.auth_token
    running = run_bridge(broker, prefix="team")
    event = sign(build_event(job.job_id, 1, "started"), job.auth_token)
    raw_publish(broker, f"team/{job.job_id}/events", event.to_bytes())
    assert wait_for(lambda: running.bridge.stats.refused == 1)
    raw_publish(broker, "team/x/events", event.to_bytes())
    assert wait_for(lambda: running.bridge.stats.recorded == 1)
    running.stop()
    assert bus_event_seqs(state_dir, job.job_id) == [1]


def test_subscribe_drops_an_event_on_another_jobs_topic(broker, cli, spawn, state_dir) -> None:  # type: ignore[no-untyped-def]
    """Following A and B: A's signed `completed` on B's topic neither ends A nor B."""
    job_a, job_b = register(cli, broker), register(cli, broker)
    token_a = Registry.open(state_dir).get(job_a).auth_token
    assert token_a
    subscriber = spawn("subscribe", "--job", job_a, "--job", job_b, "--timeout", "60")
    subscriber.wait_stderr("following")
    misplaced = sign(build_event(job_a, 1, "completed", "misplaced"), token_a)
    raw_publish(broker, f"jobs/{job_b}/events", misplaced.to_bytes())
    line = subscriber.wait_stderr(f"dropped message on jobs/{job_b}/events")
    assert f"not on its own topic jobs/{job_a}/events" in line
    publish(cli, job_a, "error", "real")
    publish(cli, job_b, "completed")
    assert subscriber.wait() == 1, subscriber.stderr
    assert sorted(events(subscriber.stdout)) == [(1, "completed"), (1, "error")]
    assert not any("misplaced" in out for out in subscriber.stdout)
