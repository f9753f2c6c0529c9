"""The answer: one path from "yes" to the agent moving on, for `orchestrate answer`,
the control room's y/n/a and its inbox alike.

1. the question (question.py): refused unless the job waits on one now, and
   unless its agent takes this answer: checked once;
2. the way in: a structured decision where the agent waits for one
   (decision.py), else its own keys, typed only while its dialog shows (keys.py),
   or for a selection list the option that means the answer (selection.py);
3. the confirmation (confirm.py), once;
4. the answer written on the job's record as an ``input`` event (who, what, how).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from app.approvals import decision, keys
from app.approvals.confirm import CONFIRM_SEC, RECORD_SEC, confirm
from app.approvals.question import Channel, Question
from app.settings import Settings
from app.tmux.driver import TmuxDriver
from app.tmux.errors import AnswerNotReceived
from registry.activity import AFTER_ANSWER, Observation
from registry.errors import RegistryError
from registry.jobs import Registry
from registry.records import Job
from registry.vocabulary import Activity, Answer, EventType

if TYPE_CHECKING:
    from app.control.launch import LaunchRecord


class Answering(Protocol):
    """What answering needs of the orchestrator (a Protocol: no import of it)."""

    settings: Settings
    registry: Registry

    @property
    def driver(self) -> TmuxDriver: ...

    def launch_record(self, job_id: str) -> LaunchRecord | None: ...

    def pane_for_job(self, job_id: str) -> str | None: ...

    def pane_log(self, job_id: str) -> Path: ...


@dataclass(frozen=True)
class Answered:
    """How an answer went in, for the line the CLI prints and the control room's notice."""

    job_id: str
    answer: Answer
    how: str
    """"hook decision", "app-server decision", "keys 1", or "meaning: Down Enter (Yes, I
    trust this folder)" for a selection list answered by meaning."""
    confirmed: bool = True
    """The registry shows the agent moved on (keys: it may only have left the screen)."""
    now: str = ""
    """The job's state afterwards ("working", "completed", or still "waiting")."""


def answer_question(
    orch: Answering,
    job_id: str,
    reply: Answer,
    *,
    by: str = "cli",
    grace_sec: float = keys.DIALOG_GRACE_SEC,
    confirm_sec: float = CONFIRM_SEC,
    until_recorded: bool = False,
    shows: Callable[[Observation], bool] | None = None,
    noted: Mapping[str, object] | None = None,
) -> Answered:
    """Answer the question ``job_id`` waits on; refused unless it waits on one now.

    AnswerNotReceived when the agent did not react within ``confirm_sec``. With
    ``until_recorded`` (the control room) only the registry's word confirms, given
    RECORD_SEC more, and an answer that went in unconfirmed comes back with
    ``confirmed`` False instead. ``shows`` and ``noted``: the approval policy's check
    that the dialog on screen is the question it decided (keys only), and what it adds
    to the ``input`` record (its rules)."""
    registry = orch.registry
    record = orch.launch_record(job_id)
    question = Question.of(registry.get(job_id), record, orch.settings.state_dir)
    question.refuse(reply)
    job = question.job
    if question.channel is Channel.KEYS:
        how, screen_moved_on = keys.type_answer(
            orch,
            question,
            reply,
            lambda: registry.get(job_id),
            grace_sec,
            shows,
            lambda seen: _next_question(registry, job, seen),
        )
    else:
        decision.decide(registry.bus, job_id, reply, by=by)
        how, screen_moved_on = question.channel.value, _never
    timeout = confirm_sec + (RECORD_SEC if until_recorded else 0.0)
    confirmed = confirm(
        registry,
        job_id,
        job.activity_at_ms,
        timeout=timeout,
        screen_moved_on=screen_moved_on,
        until_recorded=until_recorded,
    )
    if not confirmed.delivered:
        raise AnswerNotReceived(
            f"job {job_id}: the agent did not react to the answer within {timeout:.0f} s"
        )
    _record_input(registry, job_id, reply, by, how, noted)
    return Answered(job_id, reply, how, confirmed.recorded, confirmed.now)


def _next_question(registry: Registry, answered: Job, seen: Observation) -> None:
    """The question that took the answered dialog's place, recorded as the job's wait:
    the answer ended the wait it answered, and a question no hook reports (Claude Code
    2.1.332's offer to make auto mode the default) would otherwise stay behind that
    hook's stale wait. Not when something newer already spoke for the job."""
    with contextlib.suppress(RegistryError):
        now = registry.get(answered.job_id)
        moved = (now.activity, now.activity_source, now.activity_at_ms)
        if moved != (answered.activity, answered.activity_source, answered.activity_at_ms):
            return
        rule = seen.source.removeprefix("screen:")
        source = f"{AFTER_ANSWER}{answered.agent}:after the answer, screen rule {rule}"
        registry.observe(
            answered.job_id,
            Observation(Activity.WAITING, source, seen.question, seen.tool, seen.command),
        )


def _never() -> bool:
    """A decision leaves no dialog to watch: only the registry confirms it."""
    return False


def _record_input(
    registry: Registry,
    job_id: str,
    reply: Answer,
    by: str,
    how: str,
    noted: Mapping[str, object] | None = None,
) -> None:
    """The answer, as an `input` event on the job's record (who, what, how)."""
    data = {**(noted or {}), "kind": "answer", "answer": str(reply), "by": by, "how": how}
    with contextlib.suppress(RegistryError):  # the job ended meanwhile: the answer went in
        registry.publish(job_id, EventType.INPUT, f"answered {reply}", data)
