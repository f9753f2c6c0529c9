"""Codex's OSC 7501 status in a real pane stream, and hook payloads of the real CLIs,
through `orchestrate hook` as a real process on a real registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.agents import adapter_for
from app.agents.osc import StatusScanner
from registry.jobs import Registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"


@pytest.mark.parametrize("size", [1, 7, 37, 4096, 10**7])
def test_the_codex_stream_tells_its_states_in_order(size: int) -> None:
    """Fed in chunks of any size (sequences cut anywhere), the scanner sees every state."""
    raw = (FIXTURES / "codex" / "raw.bin").read_bytes()
    scanner = StatusScanner()
    seen = []
    for start in range(0, len(raw), size):
        seen += [(o.activity, o.source) for o in scanner.feed(raw[start : start + size])]
    assert len(seen) == 25  # every OSC 7501 in the capture
    activities = [activity for activity, _ in seen]
    assert activities[:6] == ["idle", "working", "waiting", "working", "idle", "idle"]
    assert seen[2] == ("waiting", "osc:codex:blocked")
    assert activities[-1] == "exited"  # state=clear at exit
    assert scanner.latest is not None and scanner.latest.activity == "exited"


def test_unknown_states_and_other_sequences_are_ignored() -> None:
    scanner = StatusScanner()
    seen = scanner.feed(b"x\x1b]7501;state=working:app=codex\x1b\\y\x1b]7501;state=idle\x07")
    assert [o.activity for o in seen] == ["working", "idle"]
    assert scanner.feed(b"\x1b]7501;state=bogus\x1b\\\x1b]0;title\x07\x1b[2J") == []


@pytest.fixture
def running_job(tmp_path: Path) -> tuple[Path, str]:
    state = tmp_path / "state"
    registry = Registry.open(state)
    job = registry.register("create done.txt", "claude", "alpha")
    registry.set_status(job.job_id, "running", "picked")
    registry.db.close()
    return state, job.job_id


def run_hook(
    state: Path, job_id: str, agent: str, payload: object
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ORCHESTRATE_HOME": str(state), "ORCHESTRATE_JOB": job_id}
    return subprocess.run(
        [sys.executable, "-m", "app", "hook", agent],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )


def test_claude_hooks_drive_the_jobs_activity(running_job: tuple[Path, str]) -> None:
    """The real payloads, in the order Claude sent them: working, waiting with the
    command, working, idle; its session id is kept; nothing is printed."""
    state, job_id = running_job
    samples = json.loads((FIXTURES / "claude" / "hook-payload-samples.json").read_text())
    expected = {
        "SessionStart": "starting",
        "UserPromptSubmit": "working",
        "PreToolUse": "working",
        "PermissionRequest": "waiting",
        "Notification:permission_prompt": "waiting",
        "PostToolUse": "working",
        "Stop": "idle",
        "Notification:idle_prompt": "idle",
    }
    registry = Registry.open(state)
    for name, activity in expected.items():
        result = run_hook(state, job_id, "claude", samples[name])
        assert (result.returncode, result.stdout) == (0, ""), result.stderr
        job = registry.get(job_id)
        assert job.activity == activity, name
        if name == "PermissionRequest":
            assert job.activity_data is not None
            assert job.activity_data["command"].startswith("touch ")
            assert job.activity_data["tool"] == "Bash"
    assert registry.get(job_id).agent_session_id == samples["SessionStart"]["session_id"]
    changes = [c.activity for c in registry.activity_history(job_id)]
    assert changes == ["starting", "working", "waiting", "working", "idle"]  # repeats: one change


def test_gemini_hooks_drive_the_jobs_activity(running_job: tuple[Path, str]) -> None:
    state, job_id = running_job
    payloads = FIXTURES / "gemini" / "hook_payloads"
    registry = Registry.open(state)
    for name, activity in [
        ("BeforeAgent", "working"),
        ("Notification", "waiting"),
        ("AfterTool", "working"),
        ("AfterAgent", "idle"),
    ]:
        result = run_hook(state, job_id, "gemini", (payloads / f"{name}.json").read_text())
        assert (result.returncode, result.stdout) == (0, ""), result.stderr
        assert registry.get(job_id).activity == activity, name
    waiting = next(c for c in registry.activity_history(job_id) if c.activity == "waiting")
    assert waiting.observation.command.startswith("touch ")
    assert waiting.observation.tool == "Shell"  # as its dialog says: "Allow execution of [Shell]?"
    assert waiting.observation.source == "hook:gemini:Notification:ToolPermission"


@pytest.mark.parametrize(
    "payload",
    ["", "not json", "[1, 2]", '{"hook_event_name": 7}', '{"hook_event_name": "Stop"' + "x" * 10],
)
def test_a_bad_payload_never_fails_the_agent(running_job: tuple[Path, str], payload: str) -> None:
    state, job_id = running_job
    result = run_hook(state, job_id, "claude", payload)
    assert (result.returncode, result.stdout) == (0, "")
    assert Registry.open(state).get(job_id).activity == "starting"


def test_a_hook_without_its_job_or_with_a_broken_registry_exits_0(tmp_path: Path) -> None:
    """No ORCHESTRATE_JOB, an unknown job, an unreadable database: exit 0, a log line."""
    samples = json.loads((FIXTURES / "claude" / "hook-payload-samples.json").read_text())
    state = tmp_path / "state"
    state.mkdir()
    result = run_hook(state, "deadbeef", "claude", samples["Stop"])
    assert (result.returncode, result.stdout) == (0, "")
    (state / "state.db").write_bytes(b"this is not a database" * 100)
    result = run_hook(state, "deadbeef", "claude", samples["Stop"])
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert (state / "logs" / "deadbeef" / "hook-errors.log").exists()


def test_hooks_of_an_unknown_agent_record_nothing(running_job: tuple[Path, str]) -> None:
    state, job_id = running_job
    result = run_hook(state, job_id, "no-such-agent", {"hook_event_name": "Stop"})
    assert result.returncode == 0
    assert Registry.open(state).get(job_id).activity == "starting"


def test_only_claude_and_gemini_read_hooks() -> None:
    assert adapter_for("aider").read_hook("Stop", {}).observation is None
    assert adapter_for("demo").read_hook("Stop", {}).observation is None
