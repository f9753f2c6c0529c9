"""What the inbox reads and does through the real source: the waiting job's question,
its agent's answers, and an answer confirmed only by the registry (real SQLite,
real tmux panes)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.control.errors import NotWaitingForPermission
from app.settings import Settings
from app.tui.registry_source import RegistrySource
from registry.activity import Observation
from registry.needs_you import Signal, watched

ASKS = Observation("waiting", "hook:claude:PermissionRequest", "Proceed?", "Bash", "npm test")


@pytest.fixture
def orch(state_dir: Path, tmux_socket: str) -> Orchestrator:
    return Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)


@pytest.fixture
def source(state_dir: Path, tmux_socket: str, orch: Orchestrator) -> RegistrySource:
    return RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, orchestrator=orch)


def until(check: Callable[[], object], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_a_waiting_row_says_what_it_asks_and_which_answers_its_agent_has(
    source: RegistrySource, orch: Orchestrator
) -> None:
    claude = orch.registry.register("a", "claude", "s1", sign_events=False)
    demo = orch.registry.register("b", "demo", "s2", sign_events=False)
    for job in (claude, demo):
        orch.registry.publish(job.job_id, "started", "go")
    orch.registry.observe(claude.job_id, ASKS)
    orch.registry.publish(demo.job_id, "permission_required", "Allow edit of x?")
    rows = {row.job_id: row for row in source.poll(0).jobs}
    asked = rows[claude.job_id]
    assert asked.waiting_permission and asked.question == "Bash `npm test`"
    assert dict(asked.asked) == {
        "question": "Proceed?",
        "tool": "Bash",
        "command": "npm test",
        "seen by": "Claude Code hook PermissionRequest",
    }
    assert asked.answers == ("yes", "no", "always")
    when = orch.registry.get(claude.job_id).activity_at_ms
    assert asked.state_since is not None and int(asked.state_since.timestamp() * 1000) == when
    published = rows[demo.job_id]
    assert published.answers == ("yes", "no")
    assert dict(published.asked)["seen by"] == "its agent's own permission_required event"


def test_a_wait_in_the_event_stream_and_the_timeline_says_what_it_waits_on(
    source: RegistrySource, orch: Orchestrator
) -> None:
    """An activity event's own detail is the bare word "waiting": the stream and the
    job's timeline add what the wait is about; other activities stay one word."""
    job = orch.registry.register("a", "claude", "s1", sign_events=False)
    orch.registry.publish(job.job_id, "started", "go")
    orch.registry.observe(job.job_id, Observation("idle", "hook:claude:Stop"))
    orch.registry.observe(job.job_id, ASKS)
    details = [(e.event, e.detail) for e in source.poll(0).events if e.job_id == job.job_id]
    assert details[-2:] == [("activity", "idle"), ("activity", "waiting: Bash `npm test`")]
    timeline = [(e.event, e.detail) for e in source.job_detail(job.job_id).timeline]
    assert timeline[-2:] == [("activity", "idle"), ("activity", "waiting: Bash `npm test`")]


def test_answering_a_job_that_does_not_wait_is_refused(
    source: RegistrySource, orch: Orchestrator
) -> None:
    job = orch.registry.register("a", "claude", "s1", sign_events=False)
    orch.registry.publish(job.job_id, "started", "go")
    with pytest.raises(NotWaitingForPermission, match="not waiting for an answer"):
        source.answer(job.job_id, "yes")


def test_a_notify_claim_is_taken_once(source: RegistrySource, orch: Orchestrator) -> None:
    job = orch.registry.register("a", "claude", "s1", sign_events=False)
    orch.registry.publish(job.job_id, "started", "go")
    orch.registry.observe(job.job_id, ASKS)
    signal = Signal("needs_you", watched(orch.registry.get(job.job_id)))
    assert source.claim_signal(signal) is True
    assert source.claim_signal(signal) is False


def test_an_answer_is_confirmed_by_the_agent_moving_on(
    source: RegistrySource, orch: Orchestrator
) -> None:
    """A real demo agent asks; the answer goes in with its keys and the registry shows
    it working again (or done): confirmed."""
    argv = [sys.executable, "-m", "app.agents.demo_cli", "--steps", "2", "--delay", "0.05"]
    job = orch.submit(
        "tidy", "demo", "alpha", agent_cmd=[*argv, "--ask-permission", "{prompt_file}"]
    )
    until(lambda: orch.registry.get(job.job_id).waiting, "the question")
    outcome = source.answer(job.job_id, "yes")
    assert outcome.confirmed and outcome.now in ("working", "completed", "idle", "exited")
    assert outcome.how == "keys y Enter"


def test_an_agent_that_ignores_the_answer_is_not_confirmed(
    source: RegistrySource, orch: Orchestrator
) -> None:
    """An agent whose question stays on screen whatever is typed: the answer is sent
    (twice: a first key can be lost) and reported as not confirmed, still waiting."""
    stubborn = "stty -echo; printf 'Overwrite the database? [y/n] '; sleep 120"
    job = orch.submit(
        "x", "custom", "beta", agent_cmd=["sh", "-c", stubborn, "sh", "{prompt_file}"]
    )

    def asked() -> bool:
        orch.reconcile()  # the screen rule sees the question (no supervisor in tests)
        return orch.registry.get(job.job_id).waiting

    until(asked, "the question")
    outcome = source.answer(job.job_id, "no")
    assert (outcome.confirmed, outcome.now) == (False, "waiting")
    assert orch.registry.get(job.job_id).waiting
