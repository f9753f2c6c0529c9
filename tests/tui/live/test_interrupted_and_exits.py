"""The control room across a reboot and at its exits, on real SQLite, tmux and Mosquitto:
interrupted jobs shown and brought back with one key, `watch --demo` stopping its own
agents when it quits, and two control rooms open on one state dir."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from app.tui.widgets.header_bar import HeaderBar
from registry.events import build_event
from registry.ingest import IngestBridge
from registry.jobs import Registry
from registry.signing import sign
from tests.ci import require_module
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until
from tests.tui.live.live_helpers import jobs_table, notices, status_of, wait_notice, wait_until
from tests.tui.live.test_end_to_end import TuiPane, watch_env

control = require_module("app.control")

SIZE = (120, 40)
SLEEPER = ["sleep", "120"]


@pytest.fixture
def orch(state_dir: Path, tmux_socket: str) -> Iterator[Any]:
    yield control.Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)


def header(app: ControlRoomApp) -> str:
    return app.main.query_one(HeaderBar).render().plain


def cell(app: ControlRoomApp, job_id: str, column: int) -> str:
    return str(jobs_table(app).get_row(job_id)[column])


def state(app: ControlRoomApp, job_id: str) -> str:
    """The state word of the job's row (its glyph left out)."""
    return cell(app, job_id, 1).split()[-1]


def agent_panes(orch: Any) -> dict[str, str]:
    """Job id -> pane id of every agent pane on the test's tmux server."""
    return dict(orch.panes_by_job())


async def test_after_tmux_is_killed_watch_lists_interrupted_jobs_and_R_brings_them_back(
    orch: Any, state_dir: Path, tmux_socket: str
) -> None:
    """A reboot, simulated by killing the tmux server: the control room (its own
    supervision passes on) shows each job as interrupted with the reason, counts them
    in the header, says R resumes them; R starts every agent again in a new pane."""
    jobs = [orch.submit(f"task {n}", "custom", f"s{n}", agent_cmd=SLEEPER) for n in (1, 2)]
    for job in jobs:
        poll_until(lambda job=job: orch.pane_log(job.job_id).stat().st_size > 0, 20)
    orch.driver.server.cmd("kill-server")
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, orchestrator=orch)
    app = ControlRoomApp(source, poll_interval_s=0.05, reconcile_interval_s=0.3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_notice(pilot, app, "2 jobs interrupted")
        assert "R resumes them all" in " ".join(notices(app))
        for job in jobs:
            await wait_until(
                pilot, lambda job=job: state(app, job.job_id) == "interrupted", "the status"
            )
            assert "its tmux server is gone" in cell(app, job.job_id, -1)
        await wait_until(pilot, lambda: "interrupted 2" in header(app), "the header count")
        assert agent_panes(orch) == {}
        await pilot.press("R")
        await wait_notice(pilot, app, "Resumed 2 interrupted jobs")
        await wait_until(pilot, lambda: "interrupted" not in header(app), "the count to go")
        for job in jobs:
            await wait_until(
                pilot,
                lambda job=job: (
                    status_of(app, job.job_id) == "running"
                    and state(app, job.job_id) != "interrupted"
                ),
                "running again",
            )
    panes = agent_panes(orch)
    assert sorted(panes) == sorted(job.job_id for job in jobs)
    assert all(orch.driver.pane_alive(pane) for pane in panes.values())
    assert {orch.registry.get(job.job_id).activity for job in jobs} <= {"starting", "working"}


async def test_quitting_watch_demo_stops_its_agents_and_only_those(
    orch: Any, state_dir: Path, tmux_socket: str
) -> None:
    """q in a control room started with demo agents: their jobs are cancelled, their
    panes and demo sessions are gone, and their processes too; another job's agent on
    the same tmux server runs on."""
    other = orch.submit("not a demo", "custom", "keep", agent_cmd=SLEEPER)
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, orchestrator=orch)
    app = ControlRoomApp(source, poll_interval_s=0.05, reconcile_interval_s=None, demo_agents=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_notice(pilot, app, "Started 2 demo agents")
        demo_ids = list(app.demo_job_ids)
        await wait_until(
            pilot, lambda: set(demo_ids) <= set(agent_panes(orch)), "the demo agents' panes"
        )
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running, "the app to quit")
    panes = agent_panes(orch)
    assert list(panes) == [other.job_id]  # the demo panes are gone, the other one is not
    assert orch.driver.pane_alive(panes[other.job_id])
    labels = {info.label for info in orch.driver.list_sessions()}
    assert "keep" in labels and not labels & {"demo-1", "demo-2"}
    for job_id in demo_ids:
        job = orch.registry.get(job_id)
        assert job.status in ("cancelled", "completed", "error")  # none left running
        demo_processes = subprocess.run(
            ["pgrep", "-f", f"app.agents.demo_cli.*{job_id}"], capture_output=True, check=False
        )
        assert demo_processes.returncode == 1, f"demo agent of {job_id} still runs"
    assert orch.registry.get(other.job_id).status == "running"


def ingest_lines(state_dir: Path) -> list[dict[str, Any]]:
    """Every job.event on the bus, as stored."""
    with sqlite3.connect(state_dir / "state.db") as conn:
        rows = conn.execute("SELECT payload FROM messages WHERE type = 'job.event'").fetchall()
    return [json.loads(row[0]) for row in rows]


async def test_two_control_rooms_on_one_state_dir_both_work_and_one_ingests(
    state_dir: Path, tmux_socket: str, broker: RunningBroker
) -> None:
    """A second control room (here beside a real `orchestrate watch` process) is told
    which one has the state dir open; both show the registry live; only one ingests
    MQTT (the other stands by), every event lands exactly once, nothing is corrupted."""
    registry = Registry.open(state_dir)
    job = registry.register("remote work", "remote", "r1", broker={"host": "127.0.0.1",
                            "port": broker.port})  # fmt: skip
    assert job.auth_token is not None
    first = TuiPane(tmux_socket, "first")
    mqtt_env = {"MQTT_BROKER": "127.0.0.1", "MQTT_PORT": str(broker.port)}
    first.start(
        [sys.executable, "-m", "app", "watch"], watch_env(state_dir, tmux_socket) | mqtt_env
    )
    first.wait_for(lambda s: job.job_id in s, "the first room")
    first_pid = int(first.tmux("display-message", "-p", "-t", "first", "#{pane_pid}").stdout)

    bridge = IngestBridge(state_dir, broker.config(), reconnect_max_s=1)
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, bridge=bridge)
    second = ControlRoomApp(source, poll_interval_s=0.05, reconcile_interval_s=0.5)
    async with second.run_test(size=SIZE) as pilot:
        text = await wait_notice(pilot, second, "Another control room")
        assert text == (
            f"Another control room (pid {first_pid}) has this state dir open: "
            "both work, on one registry"
        )
        # the first room holds the ingest (its bridge's client id): this one stands by,
        # so every event below is recorded by the first room's bridge
        await wait_until(pilot, lambda: second.main.snapshot.broker_state == "standby", "standby")
        for seq, event in enumerate(["started", *["progress"] * 18, "completed"], start=1):
            wire = sign(build_event(job.job_id, seq, event, f"step {seq}"), job.auth_token)
            raw_publish(broker, f"jobs/{job.job_id}/events", wire.to_bytes())
        await wait_until(
            pilot, lambda: jobs_table(second).jobs[job.job_id].status == "completed", "completed"
        )
        made = registry.register("registered while both are open", "claude", "alpha")
        await wait_until(pilot, lambda: made.job_id in jobs_table(second).jobs, "the new job")
        await wait_until(  # the first room is live too (polled without blocking this one)
            pilot,
            lambda: made.job_id in first.screen() and "completed" in first.screen(),
            "the first room showing both jobs",
        )
    seqs = sorted(int(event["seq"]) for event in ingest_lines(state_dir))
    assert seqs == list(range(1, 21))  # each once, whichever room recorded it
    with sqlite3.connect(state_dir / "state.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert Registry.open(state_dir).get(job.job_id).last_seq == 20
    first.keys("q")
    assert poll_until(first.exited, 20), "the first room did not quit"


def raw_publish(broker: RunningBroker, topic: str, payload: bytes) -> None:
    """Publish as an agent on another host does (QoS 1, bare paho)."""
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        client.publish(topic, payload, qos=1).wait_for_publish(5)
    finally:
        client.disconnect()
        client.loop_stop()
