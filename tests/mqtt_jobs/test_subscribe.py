"""`orchestrate publish` and `orchestrate subscribe` as real processes over a real Mosquitto."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bus.mqtt import publish_once
from registry.events import build_event
from registry.jobs import Registry
from registry.signing import sign
from tests.mqtt_jobs.conftest import raw_publish
from tests.plugin.mosquitto import RunningBroker


def register(cli: Any, broker: RunningBroker | None, *flags: str) -> str:
    """A job on ``broker`` (None: the SQLite bus alone); returns its id."""
    where = ("--broker", "127.0.0.1", "--port", str(broker.port)) if broker else ()
    result = cli(
        "job", "register", "--prompt", "sort the list", "--agent", "demo",
        "--agent-session", "tmux:demo", *where, *flags,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return str(result.stdout.strip())


def publish(cli: Any, job_id: str, event: str, detail: str = "", **kwargs: Any) -> None:
    result = cli("publish", "--job", job_id, "--event", event, "--detail", detail, **kwargs)
    assert result.returncode == 0, result.stderr


def events(lines: list[str]) -> list[tuple[int, str]]:
    """(seq, event) of each JSON line a subscriber printed."""
    return [(obj["seq"], obj["event"]) for obj in map(json.loads, lines)]


def test_done_means_subscribe_exits_0_on_completed(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """Issue 4's "done means": a subscriber in one process, publishes in others, over
    a real Mosquitto; exit 0 on completed, and the same events in `job logs`."""
    job_id = register(cli, broker)
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "60")
    subscriber.wait_stderr(f"following {job_id} on mqtt://127.0.0.1:{broker.port}")
    publish(cli, job_id, "started", "booted")
    publish(
        cli,
        job_id,
        "progress",
        "half way",
    )
    publish(cli, job_id, "completed", "all done")
    assert subscriber.wait() == 0, subscriber.stderr
    expected = [(1, "started"), (2, "progress"), (3, "completed")]
    assert events(subscriber.stdout) == expected
    assert any(f"job {job_id} completed (seq 3)" in line for line in subscriber.stderr)
    logs = [json.loads(line) for line in cli("job", "logs", job_id, "--json").stdout.splitlines()]
    published = [(e["event"]["seq"], e["event"]["event"]) for e in logs if e["kind"] == "published"]
    assert published == expected


def test_error_event_exits_1_and_late_events_are_ignored(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """An error ends the wait with exit 1; the subscriber acts on it once."""
    job_id = register(cli, broker)
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "60")
    subscriber.wait_stderr("following")
    publish(cli, job_id, "started")
    publish(cli, job_id, "error", "validation failed")
    assert subscriber.wait() == 1
    assert events(subscriber.stdout) == [(1, "started"), (2, "error")]
    assert any("error (seq 2): validation failed" in line for line in subscriber.stderr)


def test_idle_timeout_exits_2(broker, cli, spawn, state_dir) -> None:  # type: ignore[no-untyped-def]
    """No terminal event within the idle timeout: exit 2, saying which deadline passed."""
    job_id = register(cli, broker)
    token = Registry.open(state_dir).get(job_id).auth_token
    assert token
    subscriber = spawn("subscribe", "--job", job_id, "--idle-timeout", "1", "--timeout", "30")
    subscriber.wait_stderr("following")
    # Published from here, not by a new `orchestrate publish` process: on a loaded
    # machine that one took over the 1 s idle timeout to start, and the subscriber
    # rightly gave up before the event came.
    event = sign(build_event(job_id, 1, "started"), token)
    publish_once(broker.config(), f"jobs/{job_id}/events", event.to_bytes())
    assert subscriber.wait() == 2
    assert events(subscriber.stdout) == [(1, "started")]
    assert any("idle timeout" in line for line in subscriber.stderr)


def test_retained_terminal_reaches_a_late_subscriber_every_time(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """A job that completed before anyone subscribed: the retained terminal event ends
    the wait at once, and again for a second subscriber run (its session was ended)."""
    job_id = register(cli, broker)
    publish(cli, job_id, "started")
    publish(cli, job_id, "completed", "done early")
    for _ in range(2):
        late = spawn("subscribe", "--job", job_id, "--timeout", "20")
        assert late.wait() == 0, late.stderr
        assert events(late.stdout) == [(2, "completed")]


def test_forged_and_malformed_events_are_dropped_with_a_reason(
    broker, cli, spawn, state_dir
) -> None:  # type: ignore[no-untyped-def]
    """Raw paho publishes that are forged, unsigned, mis-versioned or for another job are
    dropped with a logged reason; the valid signed event still passes."""
    job_id = register(cli, broker)
    token = Registry.open(state_dir).get(job_id).auth_token
    assert token
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "60")
    subscriber.wait_stderr("following")
    topic = f"jobs/{job_id}/events"
    forged = sign(build_event(job_id, 1, "completed", "forged"), "not-the-token-at-all")
    unsigned = build_event(job_id, 1, "error", "unsigned")
    other = sign(build_event("0badc0de", 1, "completed"), token)
    wrong_version = json.loads(sign(build_event(job_id, 1, "error"), token).to_bytes())
    wrong_version["schema_version"] = 2
    for payload in (
        forged.to_bytes(), unsigned.to_bytes(), other.to_bytes(),
        json.dumps(wrong_version).encode(), b"not json",
    ):  # fmt: skip
        raw_publish(broker, topic, payload)
    raw_publish(broker, topic, sign(build_event(job_id, 1, "completed", "real"), token).to_bytes())
    assert subscriber.wait() == 0, subscriber.stderr
    assert events(subscriber.stdout) == [(1, "completed")]
    dropped = [line for line in subscriber.stderr if "dropped message" in line]
    reasons = " | ".join(dropped)
    assert len(dropped) == 5, subscriber.stderr
    for reason in ("signature mismatch", "missing signature", "unexpected job 0badc0de",
                   "schema_version 2", "not valid JSON"):  # fmt: skip
        assert reason in reasons


def test_subscriber_survives_a_broker_restart(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """Broker stopped and started mid-job: the subscriber reconnects to its persistent
    session and gets the events published while the broker was away from it."""
    job_id = register(cli, broker)
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "60")
    subscriber.wait_stderr("following")
    publish(cli, job_id, "started")
    broker.terminate()
    broker.start()
    publish(cli, job_id, "progress", "after the restart")  # queued in the session
    publish(cli, job_id, "completed")
    assert subscriber.wait() == 0, subscriber.stderr
    assert events(subscriber.stdout) == [(1, "started"), (2, "progress"), (3, "completed")]


def test_two_jobs_on_mqtt_and_bus_worst_outcome_wins(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """One subscriber follows a job on MQTT and one on the SQLite bus alone: it waits
    for both and exits with the worst outcome (error -> 1)."""
    on_mqtt = register(cli, broker)
    on_bus = register(cli, None)
    subscriber = spawn("subscribe", "--job", on_mqtt, "--job", on_bus, "--timeout", "60")
    subscriber.wait_stderr("and the SQLite bus")
    publish(cli, on_bus, "started")
    publish(cli, on_mqtt, "completed")
    publish(cli, on_bus, "error", "broke")
    assert subscriber.wait() == 1
    lines = [json.loads(line) for line in subscriber.stdout]
    assert sorted((e["job_id"], e["event"]) for e in lines) == sorted(
        [(on_bus, "started"), (on_mqtt, "completed"), (on_bus, "error")]
    )


def test_job_from_another_host_uses_the_env_token(
    broker, cli, spawn, state_dir, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A job registered elsewhere is followed with MQTT_* and ORCHESTRATE_JOB_TOKEN;
    without the token it is refused in one line."""
    job_id = register(cli, broker)
    token = Registry.open(state_dir).get(job_id).auth_token
    assert token
    elsewhere = tmp_path / "other-host"
    env = {"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(broker.port)}
    refused = spawn("subscribe", "--job", job_id, env=env, home=elsewhere)
    assert refused.wait() == 1
    assert refused.stderr == [refused.stderr[0]] and "ORCHESTRATE_JOB_TOKEN" in refused.stderr[0]
    remote = spawn(
        "subscribe", "--job", job_id, "--timeout", "30",
        env={**env, "ORCHESTRATE_JOB_TOKEN": token}, home=elsewhere,
    )  # fmt: skip
    remote.wait_stderr("following")
    publish(cli, job_id, "completed")
    assert remote.wait() == 0, remote.stderr
    assert events(remote.stdout) == [(1, "completed")]


def test_bad_subscribe_input_is_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    """Unknown job, not a job id, missing --job: one line on stderr, non-zero exit."""
    for args, text in (
        (("--job", "deadbeef"), "no job 'deadbeef'"),
        (("--job", "nope"), "not a job id"),
        ((), "Missing option '--job'"),
    ):
        result = cli("subscribe", *args)
        assert result.returncode != 0 and text in result.stderr, result.stderr


@pytest.mark.parametrize("option", ["--timeout", "--idle-timeout"])
@pytest.mark.parametrize(("value", "text"), [
    ("nan", "must be a number of seconds, not nan"),  # was accepted: no timeout at all
    ("inf", "0<x<=2592000"),
    ("2592001", "0<x<=2592000"),  # a job's own timeouts stop at 30 days too
])  # fmt: skip
def test_a_timeout_that_is_not_a_finite_span_is_a_usage_error(  # type: ignore[no-untyped-def]
    cli, option: str, value: str, text: str
) -> None:
    job_id = register(cli, None)
    result = cli("subscribe", "--job", job_id, option, value, timeout=20)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and option in result.stderr and text in result.stderr
    assert result.stdout == ""


def test_publish_over_a_real_broker_and_with_it_stopped(broker, cli, collect) -> None:  # type: ignore[no-untyped-def]
    """`orchestrate publish` puts the event on <topic_prefix>/events at QoS 1 (terminal
    retained); with the broker stopped the local record stays, one line, exit 1."""
    from bus.mqtt import MqttSubscriber

    job_id = register(cli, broker, "--topic-prefix", "team/a")
    with MqttSubscriber(broker.config(), ["team/a/events"]) as sub:
        assert sub.wait_connected(10)
        publish(cli, job_id, "started")
        publish(cli, job_id, "completed")
        got = collect(sub, 2)
    assert [(json.loads(m.payload)["seq"], m.qos, m.retain) for m in got] == [
        (1, 1, False), (2, 1, False),  # live delivery clears the retain flag
    ]  # fmt: skip
    with MqttSubscriber(broker.config(), ["team/a/events"]) as late:
        [retained] = collect(late, 1)
    assert retained.retain and json.loads(retained.payload)["event"] == "completed"

    second = register(cli, broker)
    broker.terminate()
    result = cli("publish", "--job", second, "--event", "started", "--attempts", "2")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "recorded locally" in result.stderr
    assert "after 2 attempts" in result.stderr
    record = json.loads(cli("job", "get", "--job", second).stdout)
    assert (record["last_seq"], record["status"]) == (1, "running")


def test_publish_once_to_the_job_topic_is_what_subscribe_reads(
    broker, cli, spawn, state_dir
) -> None:  # type: ignore[no-untyped-def]
    """A remote agent with only its token (no local record) publishes with the bus
    publisher; the subscriber on the control host accepts it."""
    job_id = register(cli, broker)
    token = Registry.open(state_dir).get(job_id).auth_token
    assert token
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "30")
    subscriber.wait_stderr("following")
    event = sign(build_event(job_id, 7, "completed", "from afar"), token)
    publish_once(broker.config(), f"jobs/{job_id}/events", event.to_bytes(), retain=True)
    assert subscriber.wait() == 0
    assert events(subscriber.stdout) == [(7, "completed")]


def test_retained_end_of_an_earlier_attempt_does_not_end_a_resumed_job(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """After `job resume`, the retained error of the first attempt is dropped (it is from
    before the resume); the new attempt's completed ends the wait."""
    job_id = register(cli, broker)
    publish(cli, job_id, "started")
    publish(cli, job_id, "error", "first try failed")
    assert cli("job", "resume", "--job", job_id).returncode == 0
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "30")
    subscriber.wait_stderr("following")
    subscriber.wait_stderr("before the resume")
    publish(cli, job_id, "started")
    publish(cli, job_id, "completed")
    assert subscriber.wait() == 0, subscriber.stderr
    assert events(subscriber.stdout) == [(3, "started"), (4, "completed")]


def test_a_subscriber_run_again_resumes_its_session(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """The client id is stable per (host, job set): events published between a
    subscriber that timed out and the next run of the same command are not lost."""
    job_id = register(cli, broker)
    first = spawn("subscribe", "--job", job_id, "--idle-timeout", "0.5", "--timeout", "30")
    first.wait_stderr("following")
    assert first.wait() == 2
    publish(cli, job_id, "started")  # nobody listening: queued in the session
    publish(cli, job_id, "progress", "queued too")
    second = spawn("subscribe", "--job", job_id, "--timeout", "30")
    second.wait_stderr("following")
    publish(cli, job_id, "completed")
    assert second.wait() == 0, second.stderr
    assert events(second.stdout) == [(1, "started"), (2, "progress"), (3, "completed")]


def test_two_subscribers_of_one_job_both_see_it_end(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """Two people (or agents) waiting on the same job at once, from the same host and
    state dir: both see every event and both exit 0."""
    job_id = register(cli, broker)
    first = spawn("subscribe", "--job", job_id, "--timeout", "30")
    first.wait_stderr(f"following {job_id}")
    second = spawn("subscribe", "--job", job_id, "--timeout", "30")
    second.wait_stderr(f"following {job_id}")
    for event in ("started", "progress", "completed"):
        publish(cli, job_id, event)
    expected = [(1, "started"), (2, "progress"), (3, "completed")]
    for subscriber in (first, second):
        assert subscriber.wait() == 0, subscriber.stderr
        assert events(subscriber.stdout) == expected


def test_a_resumed_bus_job_is_not_ended_by_its_earlier_attempt(cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """On the SQLite bus too: `resume && subscribe` waits for the new attempt, instead of
    replaying the old attempt's error and exiting 1 at once."""
    job_id = register(cli, None)
    publish(cli, job_id, "started")
    publish(cli, job_id, "error", "first try failed")
    assert cli("job", "resume", "--job", job_id).returncode == 0
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "30")
    subscriber.wait_stderr("following")
    publish(cli, job_id, "started")
    publish(cli, job_id, "completed")
    assert subscriber.wait() == 0, subscriber.stderr
    assert events(subscriber.stdout) == [(3, "started"), (4, "completed")]


def test_a_job_that_ends_without_a_terminal_event_ends_the_wait(broker, cli, spawn) -> None:  # type: ignore[no-untyped-def]
    """A cancel (before or while subscribing) or a status set by hand publishes no
    terminal event: subscribe reads the registry and ends with that status and why,
    not a timeout."""
    before = register(cli, None)
    assert cli("job", "cancel", "--job", before).returncode == 0
    during = register(cli, broker)
    by_hand = register(cli, None)
    publish(cli, by_hand, "started")
    subscriber = spawn(
        "subscribe", "--job", before, "--job", during, "--job", by_hand, "--timeout", "60"
    )
    subscriber.wait_stderr("following")
    assert cli("job", "cancel", "--job", during).returncode == 0
    assert cli("job", "status", "--job", by_hand, "--set", "completed").returncode == 0
    assert subscriber.wait() == 1, subscriber.stderr
    ends = {
        line.split()[2]: line.split(maxsplit=3)[3]
        for line in subscriber.stderr
        if line.startswith("orchestrate: job ")
    }
    assert ends[before].startswith("cancelled: cancelled ") and "(cli)" in ends[before]
    assert ends[during].startswith("cancelled: cancelled ") and "(cli)" in ends[during]
    assert ends[by_hand].startswith("completed: completed ") and "by hand" in ends[by_hand]
