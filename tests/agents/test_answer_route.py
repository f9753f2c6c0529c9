"""Which way an answer goes under --approvals control-room: a structured decision while
the agent's request still waits for one, its own keys otherwise."""

from __future__ import annotations

import time
from pathlib import Path

from app.control.launch import LaunchRecord
from app.orchestration.answering import awaits_decision
from registry.activity import Observation
from registry.jobs import Registry

CONTROL_ROOM = LaunchRecord(None, "/tmp", approvals="control-room", approval_wait_sec=30)


def waiting_on(tmp_path: Path, source: str, agent: str = "claude"):  # type: ignore[no-untyped-def]
    registry = Registry.open(tmp_path / "state")
    job = registry.register("create done.txt", agent, "alpha")
    registry.set_status(job.job_id, "running", "picked")
    registry.observe(job.job_id, Observation("waiting", source, tool="Bash", command="touch x"))
    return registry.get(job.job_id)


def test_claudes_waiting_hook_takes_the_decision_until_its_bound(tmp_path: Path) -> None:
    job = waiting_on(tmp_path, "hook:claude:PermissionRequest")
    assert awaits_decision(job, CONTROL_ROOM)
    assert not awaits_decision(job, CONTROL_ROOM, now=time.time() + 31)  # its dialog shows
    assert not awaits_decision(job, LaunchRecord(None, "/tmp"))  # --approvals agent


def test_a_pending_codex_app_server_request_takes_the_decision(tmp_path: Path) -> None:
    job = waiting_on(tmp_path, "appserver:codex:requestApproval", agent="codex")
    assert awaits_decision(job, CONTROL_ROOM, now=time.time() + 3600)


def test_a_question_seen_on_screen_is_answered_with_keys(tmp_path: Path) -> None:
    assert not awaits_decision(waiting_on(tmp_path, "screen:claude.dialog"), CONTROL_ROOM)
