"""`orchestrate publish` on a host without the registry: MQTT only, over a real Mosquitto.

The control host has the registry and an ingest bridge; the "remote host" is
another state dir with no ``state.db``, where the agent knows only its job id,
its token and the broker (env), as SPEC §4 says a remote agent does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bus.delivery_outbox import Outbox
from registry.delivery import outbox_path
from registry.jobs import Registry
from registry.remote_seq import SEQ_DIR
from tests.agent_host import stop_flushers
from tests.mqtt_jobs.test_ingest import remote_job
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until


@pytest.fixture
def remote_host(tmp_path: Path, broker: RunningBroker) -> Iterator[tuple[Path, dict[str, str]]]:
    """An agent's host: its own (empty) state dir and the broker in MQTT_* env (its
    background outbox flusher, if `publish` left one, is stopped afterwards)."""
    home = tmp_path / "remote-host"
    yield home, {"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(broker.port)}
    stop_flushers(home)


def publish_remotely(cli: Any, remote: tuple[Path, dict[str, str]], *args: str, **env: str) -> Any:
    home, mqtt_env = remote
    return cli("--state-dir", str(home), "publish", *args, env={**mqtt_env, **env})


def seq_file(remote: tuple[Path, dict[str, str]], job_id: str) -> Path:
    return remote[0] / SEQ_DIR / f"{job_id}.seq"


def test_a_remote_agent_publishes_and_the_control_host_records_it(
    broker, cli, spawn, state_dir, remote_host
) -> None:  # type: ignore[no-untyped-def]
    """started, progress, completed from the remote host reach a subscriber (exit 0)
    and, through `orchestrate ingest`, the job's record and `job logs`."""
    job_id, token = remote_job(state_dir, broker)
    bridge = spawn("ingest", env=remote_host[1])
    bridge.wait_stderr("ingesting")
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "30")
    subscriber.wait_stderr("following")
    for event in ("started", "progress", "completed"):
        result = publish_remotely(
            cli, remote_host, "--job", job_id, "--event", event, "--detail", f"{event} here",
            ORCHESTRATE_JOB_TOKEN=token,
        )  # fmt: skip
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert json.loads(result.stdout)["data"]["hmac_sig"]
    assert subscriber.wait() == 0, subscriber.stderr
    assert [(json.loads(line)["seq"], json.loads(line)["event"]) for line in subscriber.stdout] == [
        (1, "started"), (2, "progress"), (3, "completed"),
    ]  # fmt: skip
    assert poll_until(lambda: Registry.open(state_dir).get(job_id).status == "completed", 15)
    logs = [json.loads(line) for line in cli("job", "logs", job_id, "--json").stdout.splitlines()]
    assert [e["event"]["detail"] for e in logs if e["kind"] == "received"] == [
        "started here", "progress here", "completed here",
    ]  # fmt: skip
    assert not (remote_host[0] / "state.db").exists(), "the remote host must not grow a registry"
    assert int(seq_file(remote_host, job_id).read_text()) == 3


def test_remote_seqs_keep_counting_across_runs_and_a_topic_prefix(
    broker, cli, collect, remote_host
) -> None:  # type: ignore[no-untyped-def]
    """Each run takes the next seq; --topic-prefix (or its env var) picks the topic;
    an unsigned event is sent with a warning line."""
    from bus.mqtt import MqttSubscriber

    with MqttSubscriber(broker.config(), ["team/x/events"]) as sub:
        assert sub.wait_connected(10)
        first = publish_remotely(
            cli, remote_host, "--job", "abcdef12", "--event", "started",
            "--topic-prefix", "team/x",
        )  # fmt: skip
        second = publish_remotely(
            cli, remote_host, "--job", "abcdef12", "--event", "progress",
            ORCHESTRATE_TOPIC_PREFIX="team/x",
        )  # fmt: skip
        seqs: list[int] = []  # nobody confirms them here: the outbox may send one again

        def both_arrived() -> bool:
            seqs.extend(json.loads(m.payload)["seq"] for m in collect(sub, 1, 0.2))
            return {1, 2} <= set(seqs)

        poll_until(both_arrived, 15)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert "ORCHESTRATE_JOB_TOKEN is not set" in first.stderr
    assert sorted(set(seqs)) == [1, 2] and seqs.index(1) < seqs.index(2)


def register_on(cli: Any, mqtt_env: dict[str, str], *prefix: str) -> Any:
    args = ("--topic-prefix", *prefix) if prefix else ()
    return cli(
        "job", "register", "--prompt", "p", "--agent", "demo", "--agent-session", "tmux:demo",
        *args, env=mqtt_env,
    )  # fmt: skip


def test_a_job_on_its_own_prefix_is_told_which_ingest_hears_it(
    broker, cli, spawn, state_dir, remote_host
) -> None:  # type: ignore[no-untyped-def]
    """The control room ingests jobs/+/events; registering a job elsewhere warns, names
    the `ingest --prefix` that carries it, and that bridge does record its events."""
    mqtt_env = remote_host[1]
    for prefix in ((), ("jobs/mine",)):
        heard = register_on(cli, mqtt_env, *prefix)
        assert heard.returncode == 0 and heard.stderr == "", heard.stderr
    unheard = register_on(cli, mqtt_env, "solo")
    assert unheard.returncode == 0 and unheard.stderr.count("\n") == 1, unheard.stderr
    assert "not solo/events; no `orchestrate ingest` can" in unheard.stderr
    other = register_on(cli, mqtt_env, "team/x")
    assert other.returncode == 0 and other.stderr.count("\n") == 1, other.stderr
    assert "run `orchestrate ingest --prefix team`" in other.stderr
    job_id = other.stdout.strip()
    token = Registry.open(state_dir).get(job_id).auth_token

    bridge = spawn("ingest", "--prefix", "team", env=mqtt_env)
    bridge.wait_stderr("ingesting team/+/events")
    sent = publish_remotely(
        cli, remote_host, "--job", job_id, "--event", "started", "--topic-prefix", "team/x",
        ORCHESTRATE_JOB_TOKEN=token,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert poll_until(lambda: Registry.open(state_dir).get(job_id).status == "running", 15)
    no_broker = cli("job", "register", "--prompt", "p", "--agent", "demo",
                    "--agent-session", "tmux:demo", "--topic-prefix", "solo")  # fmt: skip
    assert no_broker.returncode == 0 and no_broker.stderr == "", "no broker: the SQLite bus"


def test_bad_remote_input_is_one_line_and_takes_no_seq(cli, remote_host) -> None:  # type: ignore[no-untyped-def]
    """No broker, a bad event, a bad job id, --raw without a registry, a damaged seq
    file: one line, non-zero, and the seq counter is left as it was."""
    home = remote_host[0]
    cases = [
        (("--event", "started"), {"MQTT_BROKER": ""}, "no MQTT_BROKER set"),
        (("--event", "finished"), {}, "unknown event 'finished'"),
        (("--event", "progress", "--detail", "see /home/alice"), {}, "absolute path"),
        (("--event", "progress", "--topic-prefix", "a/#"), {}, "wildcard"),
        (("--event", "progress", "--raw", "-"), {}, "there is none in"),
    ]
    for args, env, text in cases:
        result = publish_remotely(cli, remote_host, "--job", "abcdef12", *args, **env)
        assert result.returncode != 0 and result.stderr.count("\n") == 1, result.stderr
        assert text in result.stderr, result.stderr
        assert not seq_file(remote_host, "abcdef12").exists()
    bad_id = publish_remotely(cli, remote_host, "--job", "../etc00", "--event", "started")
    assert bad_id.returncode == 1 and "8 lowercase hex digits" in bad_id.stderr
    assert not (home / SEQ_DIR).exists() or not any((home / SEQ_DIR).iterdir())

    seq_file(remote_host, "abcdef12").parent.mkdir(parents=True, exist_ok=True)
    seq_file(remote_host, "abcdef12").write_text("garbage\n")
    damaged = publish_remotely(cli, remote_host, "--job", "abcdef12", "--event", "started")
    assert damaged.returncode == 1 and damaged.stderr.count("\n") == 1
    assert "is damaged" in damaged.stderr
    assert seq_file(remote_host, "abcdef12").read_text() == "garbage\n"


def test_broker_down_exits_1_and_the_event_waits_in_the_outbox(cli, remote_host, broker) -> None:  # type: ignore[no-untyped-def]
    """An event that could not be sent keeps its seq and its place in the outbox
    (exit 1: not at the broker, do not publish it again); the next takes seq 2."""
    broker.terminate()
    result = publish_remotely(
        cli, remote_host, "--job", "abcdef12", "--event", "started", "--attempts", "1",
        ORCHESTRATE_JOB_TOKEN="t" * 43,
    )  # fmt: skip
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "seq 1 is not at the broker yet, and waits in this host's outbox" in result.stderr
    assert int(seq_file(remote_host, "abcdef12").read_text()) == 1
    queued = Outbox(outbox_path(remote_host[0])).pending()
    assert [(m.stream, m.position) for m in queued] == [("abcdef12", 1)]


def test_a_local_job_refuses_a_topic_prefix(cli, state_dir) -> None:  # type: ignore[no-untyped-def]
    """On the registry's host the job record owns its topic: --topic-prefix is refused,
    and the job is untouched."""
    job_id = Registry.open(state_dir).register("x", "demo", "tmux:demo").job_id
    result = cli("publish", "--job", job_id, "--event", "started", "--topic-prefix", "a/b")
    assert result.returncode == 2 and "--topic-prefix is for --remote" in result.stderr
    assert Registry.open(state_dir).get(job_id).last_seq == 0
    assert os.environ.get("ORCHESTRATE_TOPIC_PREFIX") is None


def test_the_remote_path_stays_light(remote_host) -> None:  # type: ignore[no-untyped-def]
    """An agent-host publish imports neither the registry's database code nor the
    bus's (nor Textual or Spark): it is the per-event hot path. (sqlite3 it does
    import, for its outbox: 2 ms here.)"""
    import subprocess
    import sys

    home, mqtt_env = remote_host
    code = (
        "import sys\n"
        "sys.argv = ['orchestrate', '--state-dir', sys.argv[1], 'publish', '--job', 'abcdef12',"
        " '--event', 'started']\n"
        "from app.entry import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        "heavy = ['registry.jobs', 'bus.messages', 'textual', 'pyspark', 'libtmux']\n"
        "print([name for name in heavy if name in sys.modules], file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(home)],
        capture_output=True,
        text=True,
        env={**os.environ, **mqtt_env},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "[]"


def test_the_cli_default_busy_timeout_is_the_bus_default() -> None:
    """app.settings repeats bus.db's default rather than import sqlite3 for it."""
    from app.settings import DEFAULT_BUSY_TIMEOUT_MS
    from bus.db import BUSY_TIMEOUT_MS

    assert DEFAULT_BUSY_TIMEOUT_MS == BUSY_TIMEOUT_MS


def test_publish_flush_sends_what_waited_in_the_outbox(  # type: ignore[no-untyped-def]
    broker, cli, spawn, state_dir, remote_host
) -> None:
    """The broker was down: the event waited in the outbox (exit 1). By hand, once the
    broker and the control room are back, `publish --flush` sends it and waits until
    the registry has it (exit 0, outbox empty)."""
    job_id, token = remote_job(state_dir, broker)
    broker.terminate()
    failed = publish_remotely(
        cli, remote_host, "--job", job_id, "--event", "started", "--attempts", "1",
        ORCHESTRATE_JOB_TOKEN=token,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    stop_flushers(remote_host[0])  # the background flusher would do the same; not here
    still_down = publish_remotely(cli, remote_host, "--flush", "--wait", "1")
    assert still_down.returncode == 1 and still_down.stderr.count("\n") == 1
    assert "1 event(s) still wait in the outbox" in still_down.stderr
    broker.start()
    spawn("ingest", env=remote_host[1]).wait_stderr("ingesting")
    flushed = publish_remotely(cli, remote_host, "--flush", "--wait", "20")
    assert flushed.returncode == 0 and "outbox empty (1 confirmed)" in flushed.stderr
    assert Registry.open(state_dir).get(job_id).status == "running"
    assert Outbox(outbox_path(remote_host[0])).pending_count() == 0
