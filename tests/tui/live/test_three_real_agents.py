"""Issue 20's "done means", for real: a person runs three real agents (Claude Code,
Codex, Gemini CLI, each against its scripted fake model from tests/agents/offline_lab.py)
and, without leaving `orchestrate watch`, answers every permission prompt, sends one a
follow-up instruction and steps into it and back. The control room runs in a tmux server
of the person's own; keys go in with `send-keys`, the screen is read with `capture-pane`."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.selftest.models.server import FakeModelServer
from registry.jobs import Registry
from tests.agents.clis import require
from tests.agents.offline_lab import prepare
from tests.plugin.tmux import NewTmuxServer
from tests.tui.live.test_end_to_end import TuiPane, watch_env

pytestmark = [pytest.mark.slow, pytest.mark.agents]
AGENTS = ("claude", "codex", "gemini")  # each one's session label is its name too
DEADLINE_S = 120.0  # three real agent CLIs start on two loaded cores
FOLLOW_UP = "now create claude-2.txt"


@pytest.fixture
def person(tmux_socket: str, private_tmux: NewTmuxServer) -> TuiPane:
    """The person's own tmux server (not orchestrate's: stepping in nests), reaped after."""
    return TuiPane(private_tmux("orch-person"), name="person")


def until(check: Callable[[], object], what: str, pane: TuiPane) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {what}; screen:\n{pane.screen()}"
        time.sleep(0.2)


def wait_screen(pane: TuiPane, holds: Callable[[str], bool], what: str) -> str:
    until(lambda: holds(pane.screen()), what, pane)
    return pane.screen()


def rows(screen: str) -> list[str]:
    """The job ids of the jobs table's rows (a row starts with its id and its status)."""
    return re.findall(r"^│ ([0-9a-f]{8})  [^ ]+ [a-z]", screen, flags=re.MULTILINE)


def test_three_real_agents_answered_talked_to_and_stepped_into_from_watch(
    state_dir: Path,
    tmux_socket: str,
    tmp_path: Path,
    person: TuiPane,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for agent in AGENTS:
        require(agent)
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "600")  # idle stays idle here
    models: list[FakeModelServer] = []
    try:
        for agent in AGENTS:
            models.append(prepare(tmp_path, agent, agent, state_dir))
        work = {agent: tmp_path / agent / "work" for agent in AGENTS}
        # told its size: the panes here otherwise get COLUMNS=80 and LINES=24 from
        # somewhere in their environment (see test_hostile_watch.py)
        size = {"COLUMNS": "120", "LINES": "40"}
        person.start(
            [sys.executable, "-m", "app", "watch"], watch_env(state_dir, tmux_socket) | size
        )
        wait_screen(person, lambda s: "jobs" in s and "sessions" in s, "the control room")
        jobs: dict[str, str] = {}
        for agent in AGENTS:  # each submit script prints its job's id
            submit = [str(tmp_path / f"{agent}-submit")]
            done = subprocess.run(submit, capture_output=True, text=True, check=True)
            jobs[agent] = done.stdout.strip()

        # every permission prompt, answered from the inbox (each agent asks to touch a file)
        person.keys("w")
        wait_screen(person, lambda s: "Waiting for you: 3 jobs" in s, "three agents asking")
        for left in ("2 jobs", "1 job", "0 jobs"):
            person.keys("y")
            wait_screen(person, lambda s: f"Waiting for you: {left}" in s, f"{left} left")  # noqa: B023
        for agent in AGENTS:
            until((work[agent] / f"{agent}-1.txt").exists, f"{agent} to run its command", person)
        person.keys("Escape")
        wait_screen(person, lambda s: "◇ idle 3" in s.splitlines()[0], "three idle agents")

        # a follow-up instruction to Claude, typed in the control room's talk box
        person.keys("/")
        wait_screen(person, lambda s: "/ filter jobs" in s, "the filter prompt")
        person.keys("-l", "claude")
        person.keys("Enter")
        wait_screen(person, lambda s: "1 of 3" in s and "i Talk" in s, "Claude's job alone")
        person.keys("i")
        wait_screen(person, lambda s: f"to job {jobs['claude']}" in s, "the talk box")
        person.keys("-l", FOLLOW_UP)
        person.keys("Enter")
        wait_screen(person, lambda s: "touch claude-2.txt" in s, "Claude asking again")
        inputs = [
            m.payload
            for m in Registry.open(state_dir).bus.read_after(0)
            if m.type == "job.event" and m.payload["event"] == "input"
        ]
        said = [i for i in inputs if i["data"].get("chars") == len(FOLLOW_UP)]
        assert said and said[-1]["job_id"] == jobs["claude"]

        # step into Claude's own pane, answer it there, and come back
        person.keys("Enter")
        wait_screen(person, lambda s: "ctrl+q" in s and jobs["claude"] in s, "the attach hint")
        person.keys("Enter")
        inside = wait_screen(person, lambda s: "Do you want to proceed?" in s, "Claude's pane")
        assert "filter: claude" not in inside  # the terminal is the agent's now
        person.keys("Enter")  # its dialog's first choice: yes
        until((work["claude"] / "claude-2.txt").exists, "Claude to run its command", person)
        person.keys("C-q")
        back = wait_screen(person, lambda s: "filter: claude" in s, "the control room again")
        assert "Do you want to proceed?" not in back
        back = wait_screen(person, lambda s: "◇ idle 3" in s.splitlines()[0], "Claude idle again")
        assert rows(back) == [jobs["claude"]]  # the filter kept: Claude's job alone
        person.keys("q")
        until(person.exited, "q to quit", person)
    finally:
        for model in models:
            model.close()
