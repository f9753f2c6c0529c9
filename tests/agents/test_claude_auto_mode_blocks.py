"""Claude Code 2.1.332's auto mode, read from what that version really sent and showed
(tests/fixtures/agents/claude/recorded/*-2.1.332*): its PermissionDenied hook becomes a
block with its source, an agent that stops after a block needs a person (``blocked``),
and the new screens and notification are read. Real SQLite; the real CLI's run is
tests/agents/test_claude_latest.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import LaunchContext
from app.agents.claude import Claude
from app.agents.screen import match_screen
from app.tui.rows import job_row
from registry.activity import Observation
from registry.jobs import Registry
from registry.needs_you import Signal, read_waiting, watched
from registry.vocabulary import Activity, JobStatus
from registry.waiting_count import read_waiting_count

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "claude" / "recorded"
PAYLOADS: dict[str, dict[str, Any]] = json.loads(
    (RECORDED / "hook-payload-samples-2.1.332.json").read_text(encoding="utf-8")
)
OLD_PAYLOADS: dict[str, dict[str, Any]] = json.loads(
    (RECORDED.parent / "hook-payload-samples.json").read_text(encoding="utf-8")
)
BLOCKED_COMMAND = PAYLOADS["PermissionDenied"]["tool_input"]["command"]


def read(event: str, payload: dict[str, Any]) -> Observation | None:
    return Claude().read_hook(event, payload).observation


def screen(name: str) -> list[str]:
    return (RECORDED / f"{name}.txt").read_text(encoding="utf-8").splitlines()


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def running(registry: Registry, label: str = "s1") -> str:
    job = registry.register("clean up", "claude", label, sign_events=False)
    registry.publish(job.job_id, "started", "go")
    return job.job_id


def hook(registry: Registry, job_id: str, name: str) -> None:
    """What `orchestrate hook claude` records for the recorded payload ``name``."""
    payload = PAYLOADS[name]
    seen = read(payload["hook_event_name"], payload)
    assert seen is not None, name
    registry.observe(job_id, seen)


def test_permission_denied_is_a_block_with_its_command_reason_and_source() -> None:
    seen = read("PermissionDenied", PAYLOADS["PermissionDenied"])
    assert seen is not None
    assert seen.activity == Activity.WORKING  # the model is told; it may go on
    assert seen.source == "hook:claude:PermissionDenied"
    assert (seen.tool, seen.command, seen.blocked_by) == ("Bash", BLOCKED_COMMAND, "auto mode")
    assert seen.question == PAYLOADS["PermissionDenied"]["reason"]
    assert seen.summary() == f"auto mode blocked `{BLOCKED_COMMAND}`"
    other_mode = {**PAYLOADS["PermissionDenied"], "permission_mode": "dontAsk"}
    refused = read("PermissionDenied", other_mode)
    assert refused is not None and refused.blocked_by == "Claude Code (dontAsk mode)"


def test_a_hostile_block_is_stored_as_one_readable_line() -> None:
    hostile = {
        **PAYLOADS["PermissionDenied"],
        "tool_input": {"command": "rm -rf build\x1b]0;pwned\x07\n#\u202eecho ok"},
        "reason": "\x1b[31mred\x1b[0m\u200b reason",
        "permission_mode": 7,
    }
    seen = read("PermissionDenied", hostile)
    assert seen is not None
    data = seen.to_data()
    for text in (data["command"], data["question"], data["blocked_by"]):
        assert "\x1b" not in text and "\n" not in text and "\u202e" not in text
    assert data["blocked_by"] == "auto mode"  # not a string: the documented mode


def test_the_notification_auto_mode_asks_with_is_a_wait_and_the_late_ones_are_not() -> None:
    asks = read("Notification", PAYLOADS["Notification:agent_needs_input"])
    assert asks is not None and asks.activity == Activity.WAITING
    assert asks.source == "hook:claude:Notification:agent_needs_input"
    assert "Auto mode can't check actions" in asks.question
    for late in ("Notification:permission_prompt", "Notification:idle_prompt"):
        assert read("Notification", OLD_PAYLOADS[late]) is None, late


def test_every_recorded_2_1_332_payload_reads_and_keeps_its_session() -> None:
    for name, payload in PAYLOADS.items():
        reading = Claude().read_hook(payload["hook_event_name"], payload)
        assert reading.agent_session_id == payload["session_id"], name
    after_yes = read("PostToolUse", PAYLOADS["PostToolUse"])
    assert after_yes is not None and after_yes.command == "touch done.txt"
    asked = read("PermissionRequest", PAYLOADS["PermissionRequest"])
    assert asked is not None and asked.activity == Activity.WAITING
    assert asked.summary() == "Bash `touch done.txt`"


def test_the_job_settings_install_the_hooks_a_block_needs(tmp_path: Path) -> None:
    ctx = LaunchContext("j1", tmp_path, tmp_path, "/usr/bin/orchestrate hook")
    settings = json.loads(Path(Claude().write_settings(ctx)).read_text(encoding="utf-8"))
    hooks = settings["hooks"]
    assert hooks["PermissionDenied"][0]["matcher"] == "*"
    assert "Notification" in hooks and "matcher" not in hooks["Notification"][0]
    assert "permissions" not in settings  # the user's permission mode is theirs


def test_an_agent_that_stops_after_a_block_needs_a_person(registry: Registry) -> None:
    job_id = running(registry)
    for name in ("UserPromptSubmit", "PreToolUse", "PermissionDenied"):
        hook(registry, job_id, name)
    job = registry.get(job_id)
    assert job.activity == Activity.WORKING and not job.needs_person
    assert "auto mode blocked `rm -rf" in registry.why(job_id)

    hook(registry, job_id, "Stop:after-block")
    job = registry.get(job_id)
    assert job.activity == Activity.BLOCKED and job.status == JobStatus.RUNNING
    assert job.needs_person and not job.waiting  # nothing to answer
    why = registry.why(job_id)
    assert "blocked since" in why and "Claude Code hook Stop" in why
    assert f"auto mode blocked `{BLOCKED_COMMAND}`" in why
    assert PAYLOADS["PermissionDenied"]["reason"] in why
    conn = registry.db.conn
    assert read_waiting_count(conn) == 1 and [w.job_id for w in read_waiting(conn)] == [job_id]
    signal = Signal("needs_you", watched(job))
    assert signal.text.endswith(f"needs you: auto mode blocked `{BLOCKED_COMMAND}`")
    row = job_row(job)  # the control room's jobs table
    assert row.activity == Activity.BLOCKED and not row.waiting_permission
    assert row.progress_detail == f"auto mode blocked `{BLOCKED_COMMAND}`"

    # the idle screen and a repeated Stop say nothing new: one block, one signal
    screen_idle = match_screen("claude", Claude.screen_rules, screen("auto-mode-blocked-2.1.332"))
    assert screen_idle is not None and screen_idle.activity == Activity.IDLE
    assert registry.observe(job_id, screen_idle) is None
    assert registry.observe(job_id, Observation(Activity.IDLE, "hook:claude:Stop")) is None
    assert registry.get(job_id).activity_at_ms == job.activity_at_ms

    # a person sends it on: working again, and no longer counted
    hook(registry, job_id, "UserPromptSubmit")
    assert registry.get(job_id).activity == Activity.WORKING
    assert read_waiting_count(conn) == 0
    changes = [c.activity for c in registry.activity_history(job_id)]
    assert changes[-3:] == [Activity.WORKING, Activity.BLOCKED, Activity.WORKING]


def test_an_agent_that_goes_on_after_a_block_is_idle_when_it_stops(registry: Registry) -> None:
    job_id = running(registry)
    for name in ("PreToolUse", "PermissionDenied", "PreToolUse", "PostToolUse", "Stop"):
        hook(registry, job_id, name)
    job = registry.get(job_id)
    assert job.activity == Activity.IDLE and not job.needs_person
    sources = [c.observation.source for c in registry.activity_history(job_id)]
    assert "hook:claude:PermissionDenied" in sources  # the block stays in its history


def test_the_screen_idle_before_the_stop_hook_also_counts_as_blocked(registry: Registry) -> None:
    job_id = running(registry)
    hook(registry, job_id, "PermissionDenied")
    seen = match_screen("claude", Claude.screen_rules, screen("auto-mode-blocked-2.1.332"))
    assert seen is not None
    registry.observe(job_id, seen)
    job = registry.get(job_id)
    assert job.activity == Activity.BLOCKED and job.activity_source == "screen:claude.idle"
    assert registry.observe(job_id, read("Stop", PAYLOADS["Stop:after-block"])) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "activity", "about"),
    [
        ("dialog-bash-default-mode-2.1.332", Activity.WAITING, "Bash `touch done.txt`"),
        ("auto-mode-cannot-check-2.1.332", Activity.WAITING, "Auto mode can't check actions"),
        ("auto-mode-offer-after-no-2.1.332", Activity.WAITING, "Make auto mode your default"),
        ("auto-mode-blocked-2.1.332", Activity.IDLE, ""),
        ("idle-manual-mode-2.1.332", Activity.IDLE, ""),
    ],
)
def test_screen_rules_read_2_1_332_screens(name: str, activity: str, about: str) -> None:
    seen = match_screen("claude", Claude.screen_rules, screen(name))
    assert seen is not None and seen.activity == activity, name
    assert about in seen.summary()
