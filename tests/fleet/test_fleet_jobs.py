"""Jobs placed on nodes: taken and run on the node's own host, commanded from the control
room with signed commands. Real Mosquitto with the fleet's ACL, nodes as separate
processes (own state dir, HOME, tmux socket), the control room's ingest bridge, and
the demo agent in the node's panes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from bus.fleet_topics import commands_topic, node_job_events_topic
from registry.bus_types import JOB_EVENT
from registry.events import build_event
from registry.fleet_commands import new_command, signed
from registry.jobs import Registry
from registry.vocabulary import FleetVerb
from tests.conftest import Result, run_cli
from tests.fleet.hosts import PASSWORDS, NodeHost, wait_fleet
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until


def control_env(broker: RunningBroker) -> dict[str, str]:
    """The control room's broker login (its CLI commands publish to the nodes)."""
    return {
        "MQTT_BROKER": "127.0.0.1",
        "MQTT_PORT": str(broker.port),
        "MQTT_USERNAME": "ctl",
        "MQTT_PASSWORD": PASSWORDS["ctl"],
    }


def control(state_dir: Path, broker: RunningBroker, *args: str) -> Result:
    return run_cli(*args, state_dir=state_dir, env=control_env(broker), timeout=90)


def trusted_node(
    make_host: Callable[..., NodeHost],
    broker: RunningBroker,
    state_dir: Path,
    name: str,
    *args: str,
    **demo: str,
) -> NodeHost:
    """A node running with the key `node key NAME` printed on the control room."""
    host = make_host(name, broker)
    key = run_cli("node", "key", name, state_dir=state_dir)
    assert key.returncode == 0, key.stderr
    keyfile = host.state.parent / "control.key"
    keyfile.write_text(key.stdout)
    host.env |= {f"ORCHESTRATE_DEMO_{k.upper()}": v for k, v in demo.items()}
    host.run("--trust", str(keyfile), "--period", "5", *args)
    return host


def panes(host: NodeHost) -> dict[str, bool]:
    """The window names on the node's own tmux server (`job-<id>` for an agent), each
    with whether its pane still runs (a dead one stays: remain-on-exit)."""
    tmux = shutil.which("tmux") or "tmux"
    socket = host.env["ORCHESTRATE_TMUX_SOCKET"]
    listed = subprocess.run(
        [tmux, "-L", socket, "list-panes", "-a", "-F", "#{window_name} #{pane_dead}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        name: dead != "1" for name, dead in (line.split() for line in listed.stdout.splitlines())
    }


def windows(host: NodeHost) -> list[str]:
    return list(panes(host))


def agent_alive(host: NodeHost, job_id: str) -> bool:
    return panes(host).get(f"job-{job_id}", False)


def status(state_dir: Path, job_id: str) -> str:
    result = run_cli("job", "get", "--job", job_id, state_dir=state_dir)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["status"])


def recorded(state_dir: Path, job_id: str) -> list[dict[str, object]]:
    """The job's events in the control room's registry (its SQLite bus), oldest first."""
    registry = Registry.open(state_dir)
    try:
        messages = registry.bus.read_after(0, task=job_id)
    finally:
        registry.db.close()
    return [m.payload for m in messages if m.type == JOB_EVENT and m.correlation_id == job_id]


def why(state_dir: Path, job_id: str) -> str:
    result = run_cli("job", "why", "--job", job_id, state_dir=state_dir)
    assert result.returncode == 0, result.stderr
    return result.stdout


def events(state_dir: Path, job_id: str) -> list[str]:
    return [str(event["event"]) for event in recorded(state_dir, job_id)]


def submit(state_dir: Path, broker: RunningBroker, node: str) -> str:
    result = control(
        state_dir, broker, "submit", "--agent", "demo", "--agent-session", "s",
        "--prompt", "hello from the control room", "--node", node,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.slow  # two nodes and two demo agents (about 30 s here)
def test_a_job_runs_on_its_node_only_and_reports_back(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """Submitted to box2 by name, then to `any` (box1: the most free slots): each pane
    appears on its node's tmux server only, the job's events reach the control room's
    registry over the node's topics, and it completes there; a local `job pick` never
    takes a placed job."""
    box1 = trusted_node(make_host, fleet_broker, state_dir, "box1", "--slots", "3", delay="0.3")
    box2 = trusted_node(make_host, fleet_broker, state_dir, "box2", "--slots", "1", delay="0.3")
    wait_fleet(
        state_dir,
        lambda f: all(f.get(n, {}).get("online") for n in ("box1", "box2")),
        "both nodes online",
    )
    named = submit(state_dir, fleet_broker, "box2")
    poll_until(lambda: f"job-{named}" in windows(box2), 60, "the pane on box2")
    assert f"job-{named}" not in windows(box1)
    poll_until(lambda: status(state_dir, named) == "completed", 90, "completed in the registry")
    assert "started" in events(state_dir, named) and "completed" in events(state_dir, named)

    anywhere = submit(state_dir, fleet_broker, "any")
    poll_until(lambda: f"job-{anywhere}" in windows(box1), 60, "the pane on box1")
    assert f"job-{anywhere}" not in windows(box2)
    poll_until(lambda: status(state_dir, anywhere) == "completed", 90, "completed")

    waiting = submit(state_dir, fleet_broker, "box9")  # never heard of: stays pending
    picked = run_cli("job", "pick", "--agent-session", "s", state_dir=state_dir)
    assert picked.returncode != 0 and waiting not in picked.stdout
    assert status(state_dir, waiting) == "pending"


@pytest.mark.slow  # a demo agent asking y/n on a node (about 25 s here)
def test_answer_send_and_cancel_across_nodes(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """The same commands as for a local job: answered, sent to, cancelled on and
    resumed on box1, each confirmed by the node and printed."""
    box1 = trusted_node(
        make_host, fleet_broker, state_dir, "box1", ask="1", steps="100", delay="0.3"
    )
    wait_fleet(state_dir, lambda f: f.get("box1", {}).get("online"), "box1 online")
    job = submit(state_dir, fleet_broker, "box1")
    poll_until(lambda: "permission_required" in events(state_dir, job), 90, "the question")
    answered = control(state_dir, fleet_broker, "answer", "--job", job, "yes")
    assert answered.returncode == 0, answered.stderr
    assert f"job {job}: answered on node box1: answered yes" in answered.stdout
    sent = control(state_dir, fleet_broker, "send", "--job", job, "more, please")
    assert sent.returncode == 0, sent.stderr
    assert "sent on node box1: sent 12 characters" in sent.stdout
    poll_until(lambda: "input" in events(state_dir, job), 60, "the input event from box1")
    cancelled = control(state_dir, fleet_broker, "job", "cancel", "--job", job)
    assert cancelled.returncode == 0, (cancelled.stderr, recorded(state_dir, job))
    assert "on node box1: cancelled" in cancelled.stdout
    assert status(state_dir, job) == "cancelled"
    poll_until(lambda: not agent_alive(box1, job), 60, "the agent stopped on box1")
    assert status(box1.state, job) == "cancelled"
    resumed = control(state_dir, fleet_broker, "job", "resume", "--job", job)
    assert resumed.returncode == 0, resumed.stderr
    assert f"job {job}: pending on node box1: resumed (running)" in resumed.stdout
    assert agent_alive(box1, job)
    poll_until(lambda: status(state_dir, job) == "running", 60, "the new attempt reported")


@pytest.mark.slow  # a node stopped and started again (about 25 s here)
def test_a_command_to_an_offline_node_waits_and_runs_when_it_returns(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """box1 stopped: `job cancel` says it is offline since when, that the command runs
    when it returns, exits 3, and `job why` shows it not confirmed; box1 started again
    stops the agent, and its confirmation reaches the control room's record though the
    command that sent it has exited."""
    box1 = trusted_node(make_host, fleet_broker, state_dir, "box1", steps="200", delay="1")
    wait_fleet(state_dir, lambda f: f.get("box1", {}).get("online"), "box1 online")
    job = submit(state_dir, fleet_broker, "box1")
    poll_until(lambda: f"job-{job}" in windows(box1), 60, "the pane on box1")
    assert box1.process is not None
    box1.process.terminate()
    assert box1.process.wait(30) == 0
    wait_fleet(state_dir, lambda f: not f["box1"]["online"], "box1 offline")
    cancelled = control(state_dir, fleet_broker, "job", "cancel", "--job", job)
    assert cancelled.returncode == 3, cancelled
    assert "node box1 is offline since" in cancelled.stderr
    assert "the command will run when it returns" in cancelled.stderr
    assert agent_alive(box1, job)  # the agent keeps working meanwhile
    told = why(state_dir, job)  # before box1 returns: it confirms within moments then
    assert "cancel sent to box1" in told and "not confirmed yet" in told
    keyfile = box1.state.parent / "control.key"
    box1.run("--trust", str(keyfile), "--period", "5")
    poll_until(lambda: not agent_alive(box1, job), 60, "cancelled on its return")
    assert status(box1.state, job) == "cancelled"
    # The command that sent it is long gone: the control room still hears it was done.
    poll_until(lambda: "done: cancelled" in why(state_dir, job), 30, "the confirmation")


def forge(broker: RunningBroker, user: str, topic: str, payload: bytes) -> object:
    """Publish as broker user ``user``; the broker's PUBACK reason."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.username_pw_set(user, PASSWORDS[user])
    acks: list[object] = []
    client.on_publish = lambda _c, _u, _mid, reason, _p: acks.append(reason)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        client.publish(topic, payload, qos=1).wait_for_publish(10)
        poll_until(lambda: bool(acks), 10, "the PUBACK")
    finally:
        client.disconnect()
        client.loop_stop()
    return acks[0]


@pytest.mark.slow  # two nodes and a demo agent (about 25 s here)
def test_forged_commands_are_refused_and_nodes_publish_only_their_jobs(
    fleet_broker: RunningBroker,
    ingest: subprocess.Popen[str],
    make_host: Callable[..., NodeHost],
    state_dir: Path,
) -> None:
    """A command signed with another key (the control user's login, a wrong key) is
    refused and logged by the node, and does nothing; box2 publishing an event for
    box1's job on box2's own topics is refused by the control room, and on box1's
    topics by the broker. (Then the job's pane is killed on box1: the error its
    supervisor finds reaches the control room.)"""
    box1 = trusted_node(make_host, fleet_broker, state_dir, "box1", steps="200", delay="1")
    trusted_node(make_host, fleet_broker, state_dir, "box2")
    wait_fleet(
        state_dir,
        lambda f: all(f.get(n, {}).get("online") for n in ("box1", "box2")),
        "both nodes online",
    )
    job = submit(state_dir, fleet_broker, "box1")
    poll_until(lambda: "started" in events(state_dir, job), 60, "box1's job started")

    forged = signed(new_command("box1", job, FleetVerb.CANCEL), b"not the control key" * 2)
    reason = forge(fleet_broker, "ctl", commands_topic("jobs", "box1"), forged)
    assert not getattr(reason, "is_failure", True)  # the broker lets the control user send
    unsigned = json.dumps({"v": 1, "id": "abc", "node": "box1", "job_id": job}).encode()
    forge(fleet_broker, "ctl", commands_topic("jobs", "box1"), unsigned)
    log = box1.process.stderr if box1.process else None
    assert log is not None
    seen: list[str] = []
    poll_until(
        lambda: seen.append(log.readline()) or sum("refused a command" in s for s in seen) >= 2,
        30,
        "both refusals in box1's log",
    )
    refusals = [line for line in seen if "refused a command" in line]
    assert "signature mismatch" in refusals[0] and "unsigned" in refusals[1]
    assert status(state_dir, job) == "running" and agent_alive(box1, job)

    fake = build_event(job, 999, "completed", "box2 says it is done").to_bytes()
    own_topic = node_job_events_topic("jobs", "box2", job)
    assert not getattr(forge(fleet_broker, "box2", own_topic, fake), "is_failure", True)
    theirs = node_job_events_topic("jobs", "box1", job)
    assert getattr(forge(fleet_broker, "box2", theirs, fake), "is_failure", False)
    poll_until(
        lambda: "not placed on it" in (state_dir.parent / "ingest.log").read_text(),
        30,
        "the control room's refusal",
    )
    assert status(state_dir, job) == "running"
    assert 999 not in [event["seq"] for event in recorded(state_dir, job)]

    # The agent killed on box1: box1's supervisor ends the job, and says so.
    tmux = shutil.which("tmux") or "tmux"
    socket = box1.env["ORCHESTRATE_TMUX_SOCKET"]
    pid = subprocess.run(
        [tmux, "-L", socket, "display-message", "-p", "-t", f"job-{job}", "#{pane_pid}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    os.kill(int(pid), signal.SIGKILL)
    poll_until(lambda: status(state_dir, job) == "error", 60, "the job's end from box1")
    assert recorded(state_dir, job)[-1]["event"] == "error"
