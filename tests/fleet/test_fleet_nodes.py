"""Nodes as separate processes (own state dir, HOME, tmux socket) on a real Mosquitto with
an ACL, seen by a control room through its ingest bridge (`orchestrate nodes --json`)."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from app.agents.versions import parse_version, version_line
from bus.fleet_topics import presence_topic
from bus.mqtt import MqttSubscriber
from tests.conftest import run_cli
from tests.fleet.hosts import AGENT_BIN, PASSWORDS, NodeHost, fleet, wait_fleet
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until


def test_two_nodes_announce_and_a_killed_one_goes_offline(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """Both nodes appear with their agents and slots; box2 killed -9 goes offline through
    its last will while box1 stays online; box1 stopped says goodbye."""
    box1 = make_host("box1", fleet_broker, with_claude=True)
    box2 = make_host("box2", fleet_broker)
    box1.run("--slots", "2", "--period", "5")
    box2.run("--slots", "3", "--period", "5")
    seen = wait_fleet(
        state_dir,
        lambda f: all(f.get(n, {}).get("online") for n in ("box1", "box2")),
        "both nodes online",
    )
    claude = parse_version(version_line(str(AGENT_BIN / "claude")) or "")
    assert seen["box1"]["agents"]["claude"] == str(claude)
    assert "claude" not in seen["box2"]["agents"]
    assert all(seen[n]["agents"]["demo"] for n in ("box1", "box2"))
    assert (seen["box1"]["slots"], seen["box1"]["slots_free"]) == (2, 2)
    assert (seen["box2"]["slots"], seen["box2"]["slots_used"]) == (3, 0)
    assert len(seen["box2"]["load"]) == 3 and seen["box2"]["last_seen"]

    assert box2.process is not None
    box2.process.send_signal(signal.SIGKILL)
    box2.process.wait(10)
    seen = wait_fleet(state_dir, lambda f: not f["box2"]["online"], "box2 offline")
    assert seen["box2"]["left"] == "lost" and seen["box1"]["online"]

    assert box1.process is not None
    box1.process.terminate()
    assert box1.process.wait(20) == 0
    seen = wait_fleet(state_dir, lambda f: not f["box1"]["online"], "box1 offline")
    assert seen["box1"]["left"] == "stopped"


def test_a_node_cannot_announce_as_another(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """box1's broker user publishing on box2's presence topic (or box2's jobs' events, or
    a job's own topic) is refused by the broker (MQTT 5 PUBACK: not authorized), and
    box2's retained presence stays its own."""
    box2 = make_host("box2", fleet_broker)
    box2.run("--slots", "3", "--period", "5")
    wait_fleet(state_dir, lambda f: f.get("box2", {}).get("online"), "box2 online")

    forger = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    forger.username_pw_set("box1", PASSWORDS["box1"])
    acks: list[Any] = []
    forger.on_publish = lambda _c, _u, _mid, reason, _p: acks.append(reason)
    forger.connect("127.0.0.1", fleet_broker.port)
    forger.loop_start()
    try:
        forged = json.dumps({"v": 1, "node": "box2", "online": False, "boot": 2**60})
        topic = presence_topic("jobs", "box2")
        elsewhere = ["jobs/nodes/box2/jobs/j1/events", "jobs/j1/events", "jobs/nodes/box2/confirms"]
        for target in [topic, *elsewhere]:
            forger.publish(target, forged, qos=1, retain=True).wait_for_publish(10)
        poll_until(lambda: len(acks) == 4, 10, "the broker's PUBACKs")
    finally:
        forger.disconnect()
        forger.loop_stop()
    assert all(ack.is_failure and "authori" in str(ack).lower() for ack in acks), acks

    control = fleet_broker.config("ctl", PASSWORDS["ctl"])
    with MqttSubscriber(control, [topic], session_expiry_s=0) as watcher:
        retained = watcher.get(timeout=10)
    assert retained is not None and json.loads(retained.payload)["online"] is True
    assert fleet(state_dir)["box2"]["online"]


def test_a_refused_login_ends_the_node(
    fleet_broker: RunningBroker, make_host: Callable[..., NodeHost]
) -> None:
    """A wrong password cannot be fixed by retrying: the node says so and exits 1."""
    host = make_host("box1", fleet_broker)
    host.env["MQTT_PASSWORD"] = "wrong"
    process = host.run()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "refused the connection" in stderr.strip().splitlines()[-1]
    assert "not running" in host.cli("node", "status").stdout


def register(state_dir: Path, node: str, *command: str) -> tuple[str, str]:
    """Register a demo job for ``node``; its id and what the command said on stderr."""
    result = run_cli(
        *(command or ("job", "register")), "--prompt", "hi", "--agent", "demo",
        "--agent-session", "s", "--node", node, state_dir=state_dir,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip(), result.stderr


def why(state_dir: Path, job_id: str) -> str:
    result = run_cli("job", "why", "--job", job_id, state_dir=state_dir)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow  # two nodes started one after the other (about 14 s here)
def test_placement_on_the_nodes_heard(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """`any` goes to the online node with the agent; a node never heard of keeps the
    job pending, and `job why` says so; placed when that node announces itself."""
    waiting, said = register(state_dir, "box1", "submit")
    assert "waiting for a node (box1): node box1 was never heard of" in said
    box2 = make_host("box2", fleet_broker)
    box2.run("--slots", "1", "--period", "5")
    wait_fleet(state_dir, lambda f: f.get("box2", {}).get("online"), "box2 online")
    placed, said = register(state_dir, "any")
    assert "placed on node box2" in said
    assert "placement: placed on node box2" in why(state_dir, placed)
    full, said = register(state_dir, "any")
    assert "no free slot (1/1)" in said and "pending" in why(state_dir, full)
    assert "never heard of" in why(state_dir, waiting)
    box1 = make_host("box1", fleet_broker)
    box1.run("--slots", "1", "--period", "5")
    poll_until(lambda: "placed on node box1" in why(state_dir, waiting), 60, "box1 placed")


@pytest.mark.slow  # seven CLI processes, a daemon among them (about 15 s here)
def test_node_start_status_stop(
    broker: RunningBroker, make_host: Callable[..., NodeHost], private_tmux: Callable[..., str]
) -> None:
    """In the background: start returns once announced, status says so, a second node on
    the same state dir or tmux server is refused, stop waits for the exit."""
    host = make_host("box1", broker)
    started = host.cli("node", "start", "--name", "box1", "--slots", "2")
    assert started.returncode == 0, started.stderr
    assert "running" in started.stdout and "announced" in started.stdout
    status = host.cli("node", "status")
    assert status.returncode == 0 and "box1 running" in status.stdout, status
    again = host.cli("node", "start", "--name", "box1")
    assert again.returncode != 0 and "already runs" in again.stderr
    other_dir = run_cli(
        "node", "run", "--name", "box9", state_dir=host.state.parent / "other", env=host.env
    )
    assert other_dir.returncode != 0 and "tmux server" in other_dir.stderr
    assert len(other_dir.stderr.strip().splitlines()) == 1
    stopped = host.cli("node", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    after = host.cli("node", "status")
    assert after.returncode == 3 and "not running" in after.stdout


@pytest.mark.parametrize(
    ("args", "env", "reason"),
    [
        (["node", "run", "--name", "bad/name"], {}, "node name"),
        (["node", "run", "--name", ""], {}, "node name"),
        (["node", "run", "--name", "box1", "--slots", "0"], {}, "--slots"),
        (["node", "run", "--name", "box1", "--period", "0"], {}, "--period"),
        (["node", "run", "--name", "box1", "--prefix", "a/#"], {}, "prefix"),
        (["node", "start", "--name", "box1"], {"MQTT_BROKER": ""}, "MQTT_BROKER"),
        (["node", "run", "--name", "box1"], {"MQTT_USERNAME": "box2"}, "own broker user"),
        (["node", "run", "--name", "box1"], {"MQTT_PORT": "x"}, "MQTT_PORT"),
        (["node", "stop", "--timeout", "-1"], {}, "--timeout"),
        (["nodes", "--bogus"], {}, "bogus"),
        (["node", "run", "--name", "any"], {}, "cannot be 'any'"),
        (
            [
                "job",
                "register",
                "--agent",
                "demo",
                "--agent-session",
                "s",
                "--prompt",
                "p",
                "--node",
                "a/b",
            ],
            {},
            "--node",
        ),
        (
            [
                "submit",
                "--agent",
                "demo",
                "--agent-session",
                "s",
                "--prompt",
                "p",
                "--node",
                "any",
                "--agent-cmd",
                "x",
            ],
            {},
            "--node runs",
        ),
        (["broker", "config", "--node", "bad/name:pw"], {}, "node name"),
        (["broker", "config", "--node", "box1:pw:job1"], {}, "NAME:PASS"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(
    args: list[str], env: dict[str, str], reason: str, state_dir: Path, tmp_path: Path
) -> None:
    base = {"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": "1", "ORCHESTRATE_TMUX_SOCKET": "unused"}
    if args[:2] == ["broker", "config"]:
        args = [*args, "--dir", str(tmp_path / "broker")]
    result = run_cli(*args, state_dir=state_dir, env={**base, **env}, timeout=30)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], result.stderr
    assert not (state_dir / "node.json").exists()


def test_nodes_with_none_heard(state_dir: Path) -> None:
    assert fleet(state_dir) == {}
    result = run_cli("nodes", state_dir=state_dir)
    assert result.returncode == 0 and "no nodes heard of" in result.stdout


@pytest.mark.slow  # a fault test: the broker killed -9 and started again
def test_a_node_announces_again_after_the_broker_dies(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """The broker killed -9 (its retained presence gone with it) and started again: the
    node reconnects by itself and announces afresh, and its will is armed again (a
    kill -9 of the node afterwards still marks it offline)."""
    box1 = make_host("box1", fleet_broker)
    box1.run("--slots", "2", "--period", "30")
    before = wait_fleet(state_dir, lambda f: f.get("box1", {}).get("online"), "box1 online")
    fleet_broker.kill()
    fleet_broker.start()
    wait_fleet(
        state_dir,
        lambda f: f["box1"]["online"] and f["box1"]["last_seen"] != before["box1"]["last_seen"],
        "box1 announced again",
    )
    assert box1.process is not None
    box1.process.kill()
    box1.process.wait(10)
    seen = wait_fleet(state_dir, lambda f: not f["box1"]["online"], "box1 offline")
    assert seen["box1"]["left"] == "lost"


@pytest.mark.slow  # a demo agent runs on the node's own tmux server (about 20 s here)
def test_a_job_on_the_node_takes_a_slot_while_it_runs(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """A job started on the node's host runs in the node's tmux server: the node
    announces the slot taken at once, and free again once the job is done."""
    box1 = make_host("box1", fleet_broker)
    box1.env |= {"ORCHESTRATE_DEMO_STEPS": "4", "ORCHESTRATE_DEMO_DELAY": "1.5"}
    box1.run("--slots", "2", "--period", "60")
    wait_fleet(state_dir, lambda f: f.get("box1", {}).get("online"), "box1 online")
    started = box1.cli(
        "submit", "--no-wait", "--agent", "demo", "--agent-session", "s", "--prompt", "hi"
    )
    assert started.returncode == 0, started.stderr
    job_id = started.stdout.strip()
    busy = wait_fleet(state_dir, lambda f: f["box1"]["slots_used"] == 1, "a slot taken")
    assert busy["box1"]["slots_free"] == 1
    wait_fleet(state_dir, lambda f: f["box1"]["slots_used"] == 0, "the slot free again")
    assert "completed" in box1.cli("job", "get", "--job", job_id).stdout
