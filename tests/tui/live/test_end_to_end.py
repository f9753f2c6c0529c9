"""`orchestrate watch` as a person runs it: inside tmux, keys sent, the screen read back."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from registry.jobs import Registry
from tests.ci import require_module

DEADLINE_S = 30.0
ROOT = Path(__file__).resolve().parents[3]


class TuiPane:
    """One tmux session on a private socket running a command in a 120x40 pane."""

    def __init__(self, socket: str, name: str = "tui") -> None:
        self.socket = socket
        self.name = name

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )

    def start(self, argv: list[str], env: dict[str, str]) -> None:
        command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *argv])
        result = self.tmux(
            "new-session", "-d", "-s", self.name, "-x", "120", "-y", "40", "-c", str(ROOT), command
        )
        assert result.returncode == 0, result.stderr
        self.tmux("set-option", "-t", self.name, "remain-on-exit", "on")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def wait_for(self, predicate: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            assert time.monotonic() < deadline, f"gave up waiting for {what}; screen:\n{screen}"
            time.sleep(0.1)

    def exited(self) -> bool:
        result = self.tmux("display-message", "-p", "-t", self.name, "#{pane_dead}")
        return result.returncode != 0 or result.stdout.strip() == "1"


def watch_env(state_dir: Path, socket: str) -> dict[str, str]:
    return {
        "ORCHESTRATE_HOME": str(state_dir),
        "ORCHESTRATE_TMUX_SOCKET": socket,
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
    }


def test_watch_shows_the_registry_help_and_quits(state_dir: Path, tmux_socket: str) -> None:
    """Plain `orchestrate watch`: a registered job's row, `?` help, `esc`, `q` quits."""
    registry = Registry.open(state_dir)
    job = registry.register("end to end", "claude", "alpha")
    registry.publish(job.job_id, "started", "agent up")
    pane = TuiPane(tmux_socket)
    pane.start([sys.executable, "-m", "app", "watch"], watch_env(state_dir, tmux_socket))
    pane.wait_for(lambda s: job.job_id in s and "agent up" in s, "the job row")
    pane.keys("?")
    pane.wait_for(lambda s: "Keys" in s and "Cancel" in s, "the help screen")
    pane.keys("Escape")
    pane.wait_for(lambda s: "Keys" not in s and job.job_id in s, "back on the main screen")
    registry.publish(job.job_id, "completed", "all done")
    pane.wait_for(lambda s: "completed" in s and "all done" in s, "the live update")
    pane.keys("q")
    deadline = time.monotonic() + DEADLINE_S
    while not pane.exited():
        assert time.monotonic() < deadline, "q did not quit"
        time.sleep(0.1)


def test_watch_demo_runs_real_agents(state_dir: Path, tmux_socket: str) -> None:
    """`orchestrate watch --demo`: demo agents appear as rows and move to completed;
    quitting stops those still running (one waits for a permission answer)."""
    require_module("app.control")
    pane = TuiPane(tmux_socket)
    argv = [sys.executable, "-m", "app", "watch", "--demo", "--agents", "2"]
    pane.start(argv, watch_env(state_dir, tmux_socket) | {"ORCHESTRATE_DEMO_DELAY": "0.2"})
    pane.wait_for(lambda s: "Started 2 demo agents" in s or "running" in s, "demo agents")

    def two_jobs(screen: str) -> bool:
        return len(Registry.open(state_dir).list()) >= 2

    pane.wait_for(two_jobs, "two demo jobs in the registry")
    pane.wait_for(lambda s: "completed" in s.split("events")[0], "a demo job completing")
    pane.keys("?")
    pane.wait_for(lambda s: "Keys" in s, "the help screen")
    pane.keys("Escape")  # alone: ESC then q in one write would read as alt+q
    pane.wait_for(lambda s: "Keys" not in s, "back on the main screen")
    pane.keys("q")
    deadline = time.monotonic() + DEADLINE_S
    while not pane.exited():
        assert time.monotonic() < deadline, "q did not quit"
        time.sleep(0.1)
    # quitting stopped the demo agents it started: no agent pane is left on the server
    listed = pane.tmux("list-panes", "-a", "-F", "#{@orchestrate_job}")
    assert [line for line in listed.stdout.split() if line] == []
    assert {job.status for job in Registry.open(state_dir).list()} <= {
        "completed",
        "error",
        "cancelled",
    }
