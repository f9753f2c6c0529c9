"""Answering an agent's permission question: structured where the agent allows it,
else its own keys, typed only while its dialog is on screen, confirmed by the
agent's state changing.

Enter or stray text means yes in three of the four real agents, so keys are
never sent on a guess: the adapter's screen rules must see the question first.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from app.agents import adapter_for
from app.agents.base import ANSWERS, Answer
from app.agents.hook import DECISION_TYPE
from app.agents.screen import match_screen
from app.control.errors import NotWaitingForPermission
from app.control.launch import LaunchRecord
from app.settings import Settings
from app.tmux.driver import TmuxDriver
from app.tmux.errors import AnswerNotReceived
from bus.messages import Outgoing
from registry.errors import RegistryError
from registry.jobs import Registry
from registry.records import Job


class Answering(Protocol):
    """What answering needs of the orchestrator (a Protocol: no import of it)."""

    settings: Settings
    registry: Registry

    @property
    def driver(self) -> TmuxDriver: ...

    def job_dir(self, job_id: str) -> Path: ...

    def pane_for_job(self, job_id: str) -> str | None: ...


DECIDED_BY_HOOK = "hook:claude:PermissionRequest"
DECIDED_BY_APP_SERVER = "appserver:codex:requestApproval"
DIALOG_GRACE_SEC = 3.0
"""How long to wait for the dialog to be drawn after the hook (or event) said waiting."""
CONFIRM_SEC = 5.0
POLL_SEC = 0.05
SETTLE_SEC = 0.2
RESEND_AFTER_SEC = 1.5
"""Codex drops a key sent within a few ms of its dialog's first frame (measured 1 in
5-10): an answer whose dialog is still there, unchanged, after this is sent once more."""


@dataclass(frozen=True)
class Answered:
    """How an answer went in, for the line the CLI prints."""

    job_id: str
    answer: Answer
    how: str  # "hook decision" or "keys 1"


def parse_answer(text: str) -> Answer:
    """yes/y, no/n, always/a → the answer (NotWaitingForPermission never: a usage check)."""
    word = text.strip().lower()
    for answer in ANSWERS:
        if word in (answer, answer[0]):
            return answer
    raise ValueError(f"answer must be yes, no or always, not {text!r}")


def answer(
    orch: Answering,
    job_id: str,
    reply: Answer,
    *,
    by: str = "cli",
    grace_sec: float = DIALOG_GRACE_SEC,
    confirm_sec: float = CONFIRM_SEC,
) -> Answered:
    """Answer the question ``job_id`` waits on; refused unless it waits on one now."""
    job = orch.registry.get(job_id)
    if not job.waiting:
        doing = job.activity or job.last_event or "none"
        raise NotWaitingForPermission(
            f"job {job_id} is not waiting for an answer ({job.status}, {doing})"
        )
    if awaits_decision(job, LaunchRecord.load(orch.job_dir(job_id))):
        via_server = (job.activity_source or "").startswith(DECIDED_BY_APP_SERVER)
        how = "app-server decision" if via_server else "hook decision"
        return _decide(orch, job, reply, by, confirm_sec, how)
    return _type_keys(orch, job, reply, by, grace_sec, confirm_sec)


def awaits_decision(job: Job, record: LaunchRecord | None, now: float | None = None) -> bool:
    """Whether the job's question waits for a structured decision (``--approvals
    control-room``): Claude's permission hook, until its bound runs out (then the
    agent's own dialog shows, and keys answer it); Codex's app-server request, as long
    as it is pending (its dialog is on screen meanwhile, so keys would work too)."""
    if record is None or record.approvals != "control-room" or not job.waiting:
        return False
    source = job.activity_source or ""
    if source.startswith(DECIDED_BY_APP_SERVER):
        return True
    if source.startswith(DECIDED_BY_HOOK):
        waited = (time.time() if now is None else now) - (job.activity_at_ms or 0) / 1000
        return waited < record.approval_wait_sec
    return False


def _decide(
    orch: Answering, job: Job, reply: Answer, by: str, confirm_sec: float, how: str
) -> Answered:
    """Hand the waiting hook (or the Codex app-server bridge) its decision: no key is
    typed, so none can be dropped or land in the wrong dialog."""
    since = job.activity_at_ms
    orch.registry.bus.publish(
        Outgoing(
            type=DECISION_TYPE,
            from_agent=by,
            correlation_id=job.job_id,
            payload={"job_id": job.job_id, "answer": reply, "by": by},
        )
    )
    _confirm(orch, job.job_id, since, lambda: False, confirm_sec)
    _record_input(orch, job.job_id, reply, by, how)
    return Answered(job.job_id, reply, how)


def _type_keys(
    orch: Answering, job: Job, reply: Answer, by: str, grace_sec: float, confirm_sec: float
) -> Answered:
    adapter = adapter_for(job.agent, orch.settings.state_dir)
    keys = adapter.keys.answer(reply)
    if not keys:
        raise NotWaitingForPermission(f"{adapter.display_name} has no '{reply}' answer")
    pane_id = orch.pane_for_job(job.job_id)
    if pane_id is None or not orch.driver.pane_alive(pane_id):
        raise NotWaitingForPermission(f"job {job.job_id} has no live agent pane to answer in")
    rules = [rule for rule in adapter.screen_rules if rule.activity == "waiting"]

    def dialog_shown() -> bool:
        seen = match_screen(job.agent, rules, orch.driver.capture(pane_id, 40))
        return seen is not None

    deadline = time.monotonic() + grace_sec
    while not dialog_shown():
        if time.monotonic() >= deadline:
            raise NotWaitingForPermission(
                f"job {job.job_id}: its pane {pane_id} shows no question; not typing into it"
            )
        time.sleep(POLL_SEC)
    time.sleep(SETTLE_SEC)  # a key in the dialog's first few ms can be lost (Codex)
    orch.driver.send_key_names(pane_id, keys)
    resend_at = time.monotonic() + RESEND_AFTER_SEC
    while dialog_shown() and orch.registry.get(job.job_id).activity_at_ms == job.activity_at_ms:
        if time.monotonic() >= resend_at:  # the dialog ignored it: it never saw the key
            orch.driver.send_key_names(pane_id, keys)
            break
        time.sleep(POLL_SEC)
    _confirm(orch, job.job_id, job.activity_at_ms, lambda: not dialog_shown(), confirm_sec)
    how = "keys " + " ".join(keys)
    _record_input(orch, job.job_id, reply, by, how)
    return Answered(job.job_id, reply, how)


def _confirm(
    orch: Answering,
    job_id: str,
    since_ms: int | None,
    screen_moved_on: Callable[[], bool],
    timeout: float,
) -> None:
    """Until the job's activity changes (or its dialog is gone from screen)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = orch.registry.get(job_id)
        if job.status != "running" or not job.waiting or job.activity_at_ms != since_ms:
            return
        if screen_moved_on():
            return
        time.sleep(POLL_SEC)
    raise AnswerNotReceived(
        f"job {job_id}: the agent did not react to the answer within {timeout:.0f} s"
    )


def _record_input(orch: Answering, job_id: str, reply: Answer, by: str, how: str) -> None:
    """The answer, as an `input` event on the job's record (who, what, how)."""
    data = {"kind": "answer", "answer": reply, "by": by, "how": how}
    with contextlib.suppress(RegistryError):  # the job ended meanwhile: the answer went in
        orch.registry.publish(job_id, "input", f"answered {reply}", data)
