"""The question and its confirmation, checked once each: a job that asks nothing is
refused in one wording, the answers an agent takes come from its adapter's keys
(any of the three for a structured decision), and the confirmation tells the
registry's word from the screen's."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from app.agents import adapter_for
from app.approvals.confirm import confirm
from app.approvals.errors import NotWaitingForPermission
from app.approvals.question import (
    AgentAnswers,
    Channel,
    Question,
    answers_taken,
    parse_answer,
)
from app.control import NotWaitingForPermission as FromControl
from app.control.launch import LaunchRecord
from registry.activity import Observation
from registry.jobs import Registry
from registry.records import Job
from registry.vocabulary import Activity, Answer, JobStatus

CONTROL_ROOM = LaunchRecord(None, "/tmp", approvals="control-room", approval_wait_sec=30)


def job_of(tmp_path: Path, agent: str, source: str | None = "screen:x.dialog") -> Job:
    registry = Registry.open(tmp_path / "state")
    job = registry.register("tidy", agent, "alpha")
    registry.set_status(job.job_id, JobStatus.RUNNING, "picked")
    if source is not None:
        registry.observe(job.job_id, Observation(Activity.WAITING, source, tool="Bash"))
    return registry.get(job.job_id)


def test_answers_are_the_keys_an_agent_has() -> None:
    assert answers_taken(adapter_for("aider").keys) == (Answer.YES, Answer.NO, Answer.ALWAYS)
    assert answers_taken(adapter_for("demo").keys) == (Answer.YES, Answer.NO)
    cached = AgentAnswers(Path("/nonexistent"))
    assert cached.of("demo") is cached.of("demo")


@pytest.mark.parametrize(("text", "answer"), [("y", "yes"), (" NO ", "no"), ("a", "always")])
def test_parse_answer(text: str, answer: str) -> None:
    assert parse_answer(text) == answer
    with pytest.raises(ValueError, match="yes, no or always"):
        parse_answer("maybe")


def test_a_job_that_asks_nothing_is_refused_once(tmp_path: Path) -> None:
    job = job_of(tmp_path, "demo", source=None)
    with pytest.raises(NotWaitingForPermission, match=r"not waiting for an answer \(running"):
        Question.of(job, None, tmp_path)
    assert FromControl is NotWaitingForPermission  # still importable from the control room


def test_keys_take_what_the_agent_has_and_a_decision_takes_all(tmp_path: Path) -> None:
    keyed = Question.of(job_of(tmp_path / "a", "demo"), CONTROL_ROOM, tmp_path)
    assert (keyed.channel, keyed.answers) == (Channel.KEYS, (Answer.YES, Answer.NO))
    with pytest.raises(NotWaitingForPermission, match="has no 'always' answer"):
        keyed.refuse(Answer.ALWAYS)
    hooked = job_of(tmp_path / "b", "claude", "hook:claude:PermissionRequest")
    decided = Question.of(hooked, CONTROL_ROOM, tmp_path)
    assert (decided.channel, decided.answers) == (Channel.HOOK, tuple(Answer))
    late = Question.of(hooked, CONTROL_ROOM, tmp_path, now=time.time() + 60)
    assert late.channel is Channel.KEYS  # past its bound the hook gave up: its dialog shows
    mine = Question.of(hooked, LaunchRecord(None, "/tmp"), tmp_path)
    assert mine.channel is Channel.KEYS  # --approvals agent


class Jobs:
    """A registry whose job moves on after ``moves_after`` reads."""

    def __init__(self, job: Job, moves_after: int) -> None:
        self.job, self.moves_after, self.reads = job, moves_after, 0

    def get(self, job_id: str) -> Job:
        self.reads += 1
        if self.reads > self.moves_after:
            return replace(self.job, activity=Activity.WORKING, activity_at_ms=1)
        return self.job


def test_confirmation_tells_the_registry_from_the_screen(tmp_path: Path) -> None:
    job = job_of(tmp_path, "demo")
    since = job.activity_at_ms
    moved = confirm(Jobs(job, 2), job.job_id, since, timeout=5)
    assert (moved.recorded, moved.delivered, moved.now) == (True, True, "working")
    screen = confirm(Jobs(job, 10**6), job.job_id, since, timeout=5, screen_moved_on=lambda: True)
    assert (screen.recorded, screen.delivered, screen.now) == (False, True, "waiting")
    started = time.monotonic()
    waited = confirm(
        Jobs(job, 10**6),
        job.job_id,
        since,
        timeout=0.3,
        screen_moved_on=lambda: True,
        until_recorded=True,
    )
    assert (waited.recorded, waited.delivered) == (False, True)
    assert time.monotonic() - started >= 0.3
    nothing = confirm(Jobs(job, 10**6), job.job_id, since, timeout=0.1)
    assert (nothing.recorded, nothing.delivered) == (False, False)
