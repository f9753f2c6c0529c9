"""The needs-you signals in a real terminal: `orchestrate watch` in a tmux pane rings
the bell and titles itself `orchestrate (1 waiting)` when a real demo agent asks
permission, `status --tmux` says `⚠ 1`, the notify command hears of it, `y` in the
pane answers it, and the title goes back to `orchestrate`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from app.control import Orchestrator
from app.settings import Settings
from tests.tui.live.test_end_to_end import DEADLINE_S, TuiPane, watch_env

RECORDER = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(sys.stdin.read() + '\\n')\n"


def until(check: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + DEADLINE_S
    while not (value := check()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)
    return value


def test_bell_title_status_and_notify_when_a_job_starts_waiting(
    state_dir: Path, tmux_socket: str, tmp_path: Path
) -> None:
    script, out = tmp_path / "record.py", tmp_path / "notified.jsonl"
    script.write_text(RECORDER, encoding="utf-8")
    pane = TuiPane(tmux_socket, name="control")

    def shown(field: str) -> str:
        return pane.tmux("display-message", "-p", "-t", pane.name, field).stdout.strip()

    def status_line() -> str:
        argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "status", "--tmux"]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()

    notify = f"{sys.executable} {script} {out}"
    pane.start(
        [sys.executable, "-m", "app", "watch", "--notify-cmd", notify],
        watch_env(state_dir, tmux_socket),
    )
    pane.wait_for(lambda s: "jobs" in s and "sessions" in s, "the control room")
    until(lambda: shown("#{pane_title}") == "orchestrate", "the title orchestrate")
    assert shown("#{window_bell_flag}") == "0" and status_line() == ""

    orch = Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    argv = [sys.executable, "-m", "app.agents.demo_cli", "--steps", "2", "--delay", "0.05"]
    job = orch.submit(
        "tidy", "demo", "alpha", agent_cmd=[*argv, "--ask-permission", "{prompt_file}"]
    )
    until(lambda: shown("#{pane_title}") == "orchestrate (1 waiting)", "the waiting title")
    assert shown("#{window_bell_flag}") == "1"  # the control room's session is not attached
    assert status_line() == "⚠ 1"
    pane.wait_for(lambda s: "waiting for you: 1" in s and job.job_id in s, "the waiting panel")
    until(lambda: out.exists() and out.read_text().strip(), "the notify command")
    first = json.loads(out.read_text().splitlines()[0])
    assert (first["event"], first["job_id"]) == ("needs_you", job.job_id)

    pane.keys("y")
    until(lambda: shown("#{pane_title}") == "orchestrate", "the title back")
    until(lambda: orch.registry.get(job.job_id).status == "completed", "the job to complete")
    assert status_line() == ""
    until(lambda: len(out.read_text().splitlines()) == 2, "the end announced")
    events = [json.loads(line)["event"] for line in out.read_text().splitlines()]
    assert events == ["needs_you", "finished"]
    pane.keys("q")
    until(pane.exited, "q to quit")
