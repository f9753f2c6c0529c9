"""The ``unknown`` activity (issue 27, item 4): a screen no rule explains, held for
UNKNOWN_AFTER_SEC with no structured signal since, is shown as what it is, with the
pane's last lines, instead of a stale working or waiting. Real registry, scripted
screens, the observer's own clock."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.supervision.observer import UNKNOWN_AFTER_SEC, UNKNOWN_MARGIN_SEC, AgentObserver
from registry.activity import Observation
from registry.jobs import Registry
from tests.agents.test_observer import Screen, look, running

RULE = "\u2500" * 40
AIDER_IDLE = ["Running touch done.txt", RULE, "diff>"]
GERMAN = [
    "touch done.txt",
    "Befehl ausführen? (J)a/(N)ein [Ja]:",
    "\u202eevil\u202c \x1b[31mred",
]


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def test_a_screen_no_rule_explains_becomes_unknown_with_its_last_lines(
    registry: Registry, tmp_path: Path
) -> None:
    job_id = running(registry, "aider")
    screen, log = Screen(), tmp_path / "pane.log"
    screen.lines = AIDER_IDLE
    log.write_bytes(b"idle")
    observer = AgentObserver(screen)
    now = time.time()
    look(observer, registry, job_id, log, now)
    look(observer, registry, job_id, log, now + 1)
    assert registry.get(job_id).activity == "idle"
    screen.lines = [*AIDER_IDLE, *GERMAN]
    log.write_bytes(b"idle, then a question in German")
    look(observer, registry, job_id, log, now + 2)
    assert registry.get(job_id).activity == "working"  # it printed: output says working
    look(observer, registry, job_id, log, now + 2 + UNKNOWN_AFTER_SEC - 1)
    assert registry.get(job_id).activity == "working"  # not for long enough yet
    look(observer, registry, job_id, log, now + 2 + UNKNOWN_AFTER_SEC)
    job = registry.get(job_id)
    assert job.activity == "unknown"
    question = (job.activity_data or {}).get("question", "")
    assert "Befehl ausführen? (J)a/(N)ein [Ja]:" in question
    assert "touch done.txt" in question
    assert "\x1b" not in question and "\u202e" not in question  # sanitised (clean_text)
    assert "unknown since" in registry.why(job_id)


def test_a_known_screen_after_unknown_is_read_again(registry: Registry, tmp_path: Path) -> None:
    job_id = running(registry, "aider")
    screen, log = Screen(), tmp_path / "pane.log"
    screen.lines = ["Running touch done.txt", "Waiting for openai/fake-model"]
    log.write_bytes(b"works")
    observer = AgentObserver(screen)
    now = time.time()
    registry.observe(job_id, Observation("working", "process:output"))
    look(observer, registry, job_id, log, now)
    screen.lines = [*AIDER_IDLE, *GERMAN]
    log.write_bytes(b"works, asks")
    look(observer, registry, job_id, log, now + 1)
    look(observer, registry, job_id, log, now + 1 + UNKNOWN_AFTER_SEC)
    assert registry.get(job_id).activity == "unknown"
    screen.lines = [*GERMAN, "j", *AIDER_IDLE]
    log.write_bytes(b"asks, answered by hand, idle")
    look(observer, registry, job_id, log, now + 2 + UNKNOWN_AFTER_SEC)
    look(observer, registry, job_id, log, now + 3 + UNKNOWN_AFTER_SEC)
    assert registry.get(job_id).activity == "idle"


def test_a_start_no_rule_describes_is_not_unknown(registry: Registry, tmp_path: Path) -> None:
    """Aider's banner and loading screen (20 s and more under load) before any of its
    screens a rule knows: it is starting up, not showing something new."""
    job_id = running(registry, "aider")
    screen, log = Screen(), tmp_path / "pane.log"
    screen.lines = ["Aider v0.86.2", "Model: openai/fake-model with diff edit format"]
    log.write_bytes(b"banner")
    observer = AgentObserver(screen)
    now = time.time()
    for step in range(4):
        look(observer, registry, job_id, log, now + step * UNKNOWN_AFTER_SEC)
    assert registry.get(job_id).activity == "working"


def test_a_screen_that_keeps_moving_is_not_unknown(registry: Registry, tmp_path: Path) -> None:
    """Aider streaming its reply: no rule for the text, but it moves: working."""
    job_id = running(registry, "aider")
    screen, log = Screen(), tmp_path / "pane.log"
    observer = AgentObserver(screen)
    now = time.time()
    registry.observe(job_id, Observation("working", "process:output"))
    for step in range(int(UNKNOWN_AFTER_SEC) * 3):
        screen.lines = [f"Here is line {n} of the reply." for n in range(step + 1)]
        log.write_bytes(b"x" * (step + 1))
        look(observer, registry, job_id, log, now + step)
    assert registry.get(job_id).activity == "working"


def test_a_hook_agents_own_redraw_after_its_hook_is_not_unknown(
    registry: Registry, tmp_path: Path
) -> None:
    """Claude Code 2.1.332's idle footer is not the one its idle rule knows; its Stop
    hook said idle, and the screen has not changed since: idle stays."""
    job_id = running(registry, "claude")
    registry.observe(job_id, Observation("idle", "hook:claude:Stop"))
    screen, log = Screen(), tmp_path / "pane.log"
    screen.lines = ["\u276f please create done.txt", "", " \u23f5\u23f5 auto mode on (shift+tab)"]
    log.write_bytes(b"idle")
    observer = AgentObserver(screen)
    now = time.time()
    for step in range(4):
        look(observer, registry, job_id, log, now + step * UNKNOWN_AFTER_SEC)
    assert registry.get(job_id).activity == "idle"


def test_a_hook_agent_showing_a_screen_no_rule_knows_is_unknown(
    registry: Registry, tmp_path: Path
) -> None:
    """Its hook said working; later a dialog of a shape no rule knows, and no hook
    since: not a stale working."""
    job_id = running(registry, "claude")
    registry.observe(job_id, Observation("working", "hook:claude:PreToolUse"))
    screen, log = Screen(), tmp_path / "pane.log"
    screen.lines = ["\u25cf Bash(touch done.txt)", " esc to interrupt"]
    log.write_bytes(b"working")
    observer = AgentObserver(screen)
    now = time.time()
    look(observer, registry, job_id, log, now)
    changed = now + UNKNOWN_MARGIN_SEC + 1
    screen.lines = [" Diesem Befehl vertrauen?", " \u276f Ja", "   Nein", "", "", ""]
    log.write_bytes(b"working, then a dialog")
    look(observer, registry, job_id, log, changed)
    look(observer, registry, job_id, log, changed + UNKNOWN_AFTER_SEC)
    job = registry.get(job_id)
    assert job.activity == "unknown", registry.activity_history(job_id)
    assert "Nein" in (job.activity_data or {}).get("question", "")


def test_a_wait_its_hook_reported_is_never_made_unknown(registry: Registry, tmp_path: Path) -> None:
    job_id = running(registry, "claude")
    hook = Observation("waiting", "hook:claude:PermissionRequest", question="Allow Bash?")
    registry.observe(job_id, hook)
    screen, log = Screen(), tmp_path / "pane.log"
    observer = AgentObserver(screen)
    now = time.time()
    screen.lines = [" Diesem Befehl vertrauen?", " \u276f Ja", "   Nein", "", "", ""]
    log.write_bytes(b"dialog")
    look(observer, registry, job_id, log, now + UNKNOWN_MARGIN_SEC + 1)
    look(observer, registry, job_id, log, now + UNKNOWN_MARGIN_SEC + 1 + UNKNOWN_AFTER_SEC)
    assert registry.get(job_id).activity == "waiting"


def test_an_agent_whose_rules_only_know_its_questions_is_never_unknown(
    registry: Registry, tmp_path: Path
) -> None:
    """A generic agent's yes/no rules explain its questions, not its other screens."""
    job_id = running(registry, "generic")
    registry.observe(job_id, Observation("working", "process:output"))
    screen, log = Screen(), tmp_path / "pane.log"
    screen.lines = ["bot> thinking about it"]
    log.write_bytes(b"bot")
    observer = AgentObserver(screen)
    now = time.time()
    look(observer, registry, job_id, log, now + 1)
    look(observer, registry, job_id, log, now + 1 + UNKNOWN_AFTER_SEC * 2)
    assert registry.get(job_id).activity != "unknown"
