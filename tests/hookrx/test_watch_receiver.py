"""The control room receives hooks when no supervisor does, and hands over: a real
`orchestrate watch` in a real tmux pane (no background supervisor), the real hook
client, then a real `orchestrate supervise` that stands by and takes over when the
control room quits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.control import Orchestrator
from app.hookrx import client
from app.hookrx.slot import LOCK_NAME
from registry.jobs import Registry
from tests.hookrx.test_receiver import SAMPLES, SYSTEM_PYTHON, run_client
from tests.polling import poll_until
from tests.tui.live.test_end_to_end import DEADLINE_S, TuiPane, watch_env


def holder(state_dir: Path, lock: str = LOCK_NAME) -> str:
    """The pid written in a lock file (by whoever last took it)."""
    path = state_dir / lock
    return path.read_text().strip() if path.exists() else ""


def sources(state_dir: Path, job_id: str) -> list[str]:
    registry = Registry.open(state_dir)
    try:
        return [c.observation.source for c in registry.activity_history(job_id)]
    finally:
        registry.db.close()


def test_watch_receives_hooks_then_hands_over_to_the_supervisor(
    orch: Orchestrator, state_dir: Path, tmux_socket: str
) -> None:
    assert os.environ["ORCHESTRATE_SUPERVISOR"] == "off"  # (the test session's default)
    job = orch.submit("create done.txt", "custom", "alpha", agent_cmd=["sleep", "120"])
    state = state_dir.resolve()
    socket_path = Path(client.socket_path(str(state)))
    pane = TuiPane(tmux_socket)
    pane.start([sys.executable, "-m", "app", "watch"], watch_env(state_dir, tmux_socket))
    pane.wait_for(lambda s: job.job_id in s, "the job row")
    watch_pid = pane.tmux("display-message", "-p", "-t", pane.name, "#{pane_pid}").stdout.strip()
    poll_until(lambda: socket_path.is_socket() and holder(state) == watch_pid, what="watch listens")

    # no orchestrate beside the system python: only the receiver can record this (the
    # pane's output said working: an idle is a change the history keeps)
    result = run_client(state, job.job_id, SAMPLES["Stop"], python=SYSTEM_PYTHON)
    assert (result.returncode, result.stdout) == (0, "")
    assert "hook:claude:Stop" in sources(state, job.job_id)

    env = {**os.environ, "ORCHESTRATE_SUPERVISOR": "on", "ORCHESTRATE_HOME": str(state)}
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "app", "supervise"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        up = str(supervisor.pid)
        poll_until(lambda: holder(state, "supervisor.lock") == up, what="the supervisor up")
        assert holder(state) == watch_pid  # it stands by: one listener
        pane.keys("q")
        poll_until(pane.exited, timeout=DEADLINE_S, what="watch to quit")
        poll_until(
            lambda: holder(state) == up and socket_path.is_socket(),
            what="the supervisor to take over",
        )
        result = run_client(state, job.job_id, SAMPLES["PermissionRequest"], python=SYSTEM_PYTHON)
        assert (result.returncode, result.stdout) == (0, "")
        assert "hook:claude:PermissionRequest" in sources(state, job.job_id)
    finally:
        supervisor.terminate()
        supervisor.wait(30)
