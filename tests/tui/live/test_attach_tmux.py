"""Stepping into an agent's pane and back, for real: `orchestrate watch` runs in a pane
of a tmux server of the person's own (so the agent's tmux nests, `$TMUX` unset), keys
go in with `send-keys`, the screen is read with `capture-pane`."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.ci import require_module
from tests.plugin.tmux import NewTmuxServer

control = require_module("app.control")
DEADLINE_S = 40.0  # the control room starts in a few seconds, slower on a loaded machine


@pytest.fixture
def outer(tmux_socket: str, private_tmux: NewTmuxServer) -> str:
    """The person's own tmux server (not orchestrate's), reaped after the test."""
    return private_tmux("orch-outer")


def tmux(server: str, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", server, *args], capture_output=True, text=True, check=False
    )
    return done.stdout


def screen_of(server: str) -> str:
    return tmux(server, "capture-pane", "-p", "-t", "person")


def wait_screen(server: str, holds: Callable[[str], bool], what: str) -> str:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        shown = screen_of(server)
        if holds(shown):
            return shown
        assert time.monotonic() < deadline, f"gave up waiting for {what}; screen:\n{shown}"
        time.sleep(0.1)


def test_enter_attaches_ctrl_q_comes_back_and_the_app_is_as_it_was(
    state_dir: Path, tmux_socket: str, outer: str
) -> None:
    """A filter typed, the second job selected, enter (then Attach on the one-time
    hint): the agent's own pane fills the terminal. ctrl+q: the control room again,
    the filter still applied, and `d` opens the page of the job that was selected."""
    orch: Any = control.Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    agent = ["sh", "-c", "echo inside-$0-pane; exec sleep 600", "{prompt}"]
    first = orch.submit("first", "custom", "att-1", agent_cmd=agent)
    second = orch.submit("second", "custom", "att-2", agent_cmd=agent)
    watch = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "watch"]
    command = shlex.join(["env", f"ORCHESTRATE_TMUX_SOCKET={tmux_socket}", *watch])
    cwd = str(Path(__file__).resolve().parents[3])
    tmux(outer, "new-session", "-d", "-s", "person", "-x", "100", "-y", "30", "-c", cwd, command)
    wait_screen(outer, lambda s: first.job_id in s and second.job_id in s, "both jobs")
    tmux(outer, "send-keys", "-t", "person", "/")  # keys go in as a person types them:
    wait_screen(outer, lambda s: "/ filter jobs" in s, "the filter prompt")  # one by one
    tmux(outer, "send-keys", "-t", "person", "-l", "att-")
    wait_screen(outer, lambda s: "filter: att-" in s, "the filter")
    tmux(outer, "send-keys", "-t", "person", "Enter")
    wait_screen(outer, lambda s: "i Talk" in s, "the prompt closed (the main footer back)")
    tmux(outer, "send-keys", "-t", "person", "g", "j")  # the second row: the second job
    tmux(outer, "send-keys", "-t", "person", "Enter")
    wait_screen(outer, lambda s: "ctrl+q" in s and second.job_id in s, "the attach hint")
    tmux(outer, "send-keys", "-t", "person", "Enter")
    inside = wait_screen(outer, lambda s: "inside-second-pane" in s, "the agent's pane")
    assert "filter: att-" not in inside  # the terminal is the agent's now
    tmux(outer, "send-keys", "-t", "person", "C-q")
    back = wait_screen(outer, lambda s: "filter: att-" in s, "the control room")
    assert "inside-second-pane" not in back and "2 of 2" in back
    tmux(outer, "send-keys", "-t", "person", "d")
    wait_screen(outer, lambda s: f"job {second.job_id}" in s, "the page of the selected job")
    assert orch.registry.get(second.job_id).status == "running"  # only looked at


def live_app(state_dir: Path, tmux_socket: str, orch: Any) -> Any:
    from app.tui.app import ControlRoomApp
    from app.tui.registry_source import RegistrySource

    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, orchestrator=orch)
    return ControlRoomApp(source, poll_interval_s=0.05, reconcile_interval_s=None)


async def test_i_sends_text_that_reaches_the_agents_pane(state_dir: Path, tmux_socket: str) -> None:
    """i, a message, enter: the text arrives in the agent's pane as a paste then Enter
    (the agent here echoes each line it reads), and the job records an `input` event
    saying who sent how much."""
    from tests.tui.live.live_helpers import select_job, wait_notice

    orch: Any = control.Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    agent = ["sh", "-c", 'echo ready; while read line; do echo "got:$line"; done', "{prompt}"]
    job = orch.submit("listen", "custom", "talk-1", agent_cmd=agent)
    pane_id = orch.pane_for_job(job.job_id)
    assert pane_id is not None
    app = live_app(state_dir, tmux_socket, orch)
    async with app.run_test(size=(120, 40)) as pilot:
        await select_job(pilot, app, job.job_id)
        await pilot.press("i", *"also update the changelog", "enter")
        await wait_notice(pilot, app, f"Sent 25 characters to {job.job_id}")
    deadline = time.monotonic() + DEADLINE_S
    while "got:also update the changelog" not in tmux(
        tmux_socket, "capture-pane", "-p", "-t", pane_id
    ):
        assert time.monotonic() < deadline, tmux(tmux_socket, "capture-pane", "-p", "-t", pane_id)
        time.sleep(0.1)
    inputs = [
        m.payload
        for m in orch.registry.bus.read_after(0)
        if m.type == "job.event" and m.payload["event"] == "input"
    ]
    assert inputs and inputs[-1]["data"]["chars"] == 25
    assert "(control room)" in inputs[-1]["data"]["by"]
    assert isinstance(inputs[-1]["data"]["took_ms"], int)


async def test_t_on_a_running_job_without_a_pane_leaves_it_running(
    state_dir: Path, tmux_socket: str
) -> None:
    """A job picked by hand runs with no pane of orchestrate's: `t` opens the split on
    its (missing) pane log, and the next supervision pass leaves the job as it was. `t`
    created the log, which marks a job whose agent orchestrate started: the job was
    failed (later marked interrupted) as an agent whose pane had vanished."""
    from tests.tui.live.live_helpers import select_job, wait_notice

    orch: Any = control.Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    job = orch.registry.register("by hand", "bash", "hand")
    orch.registry.pick("hand")
    app = live_app(state_dir, tmux_socket, orch)
    async with app.run_test(size=(120, 40)) as pilot:
        await select_job(pilot, app, job.job_id)
        await pilot.press("t")
        await wait_notice(pilot, app, "Opened the tmux control-room split")
    orch.reconciler.clock = lambda: time.time() + 600  # well past any start-up grace
    orch.reconcile()
    after = orch.registry.get(job.job_id)
    assert (after.status, after.activity) != ("running", "interrupted")
    assert after.status == "running"


def test_inside_orchestrates_own_tmux_enter_switches_the_client_and_ctrl_q_back(
    state_dir: Path, tmux_socket: str, outer: str
) -> None:
    """The control room runs in a session of orchestrate's own tmux server, a person's
    client attached to it: enter switches that client to the agent's pane (the app
    keeps running), ctrl+q switches it back to the control room's session."""
    orch: Any = control.Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    agent = ["sh", "-c", "echo switched-into-$0; exec sleep 600", "{prompt}"]
    job = orch.submit("agent", "custom", "sw-1", agent_cmd=agent)
    watch = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "watch"]
    command = shlex.join(["env", f"ORCHESTRATE_TMUX_SOCKET={tmux_socket}", *watch])
    cwd = str(Path(__file__).resolve().parents[3])
    tmux(
        tmux_socket, "new-session", "-d", "-s", "room", "-x", "100", "-y", "30", "-c", cwd, command
    )
    client = shlex.join(["env", "-u", "TMUX", "tmux", "-L", tmux_socket, "attach", "-t", "=room"])
    tmux(outer, "new-session", "-d", "-s", "person", "-x", "100", "-y", "30", client)
    wait_screen(outer, lambda s: job.job_id in s and "i Talk" in s, "the control room")
    tmux(outer, "send-keys", "-t", "person", "Enter")
    wait_screen(outer, lambda s: "ctrl+q" in s, "the attach hint")
    tmux(outer, "send-keys", "-t", "person", "Enter")
    wait_screen(outer, lambda s: "switched-into-agent" in s, "the agent's session")
    tmux(outer, "send-keys", "-t", "person", "C-q")
    wait_screen(outer, lambda s: job.job_id in s and "i Talk" in s, "the control room again")
    assert "room" in tmux(tmux_socket, "list-clients", "-F", "#{client_session}")
