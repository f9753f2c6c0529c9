"""The question: is the job's agent asking one now, which answers does it take, and
which way an answer reaches it. Worked out once per answer, here.

An agent takes the answers its adapter has keys for (``Keys`` in
``app/agents/<kind>.py``: the demo agent has no "always"); a structured decision
(Claude's permission hook, Codex's app-server request under ``--approvals
control-room``) takes any of the three, since no key is typed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from app.agents import adapter_for
from app.agents.base import AgentAdapter, Keys
from app.approvals.decision import CONTROL_ROOM_APPROVALS
from app.approvals.errors import NotWaitingForPermission
from registry.records import Job
from registry.vocabulary import Answer

if TYPE_CHECKING:
    from app.control.launch import LaunchRecord

DECIDED_BY_HOOK = ("hook:claude:PermissionRequest", "hook:qwen:PermissionRequest")
"""The activity sources of a question a permission hook waits on (Claude Code's, and
Qwen Code's, which reads the same decision)."""
DECIDED_BY_APP_SERVER = "appserver:codex:requestApproval"
"""The activity source of a request Codex's app-server holds (app/agents/codex_bridge.py)."""
DECIDED_BY_ACP = "acp:"
"""The source prefix of an ACP session's wait: orchestrate's own client holds the
agent's ``session/request_permission`` (app/agents/acp_session.py), whatever
``--approvals`` says: the agent has no dialog to type into."""


class Channel(StrEnum):
    """How an answer reaches the agent (the words the CLI prints after "answered")."""

    HOOK = "hook decision"
    APP_SERVER = "app-server decision"
    ACP = "ACP decision"
    KEYS = "keys"


def answers_taken(keys: Keys) -> tuple[Answer, ...]:
    """The answers an agent's keys can give, in the vocabulary's order."""
    return tuple(answer for answer in Answer if keys.answer(answer))


class AgentAnswers:
    """Which answers each agent kind takes, read from its adapter once per kind
    (the control room asks for every waiting row of every poll)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._known: dict[str, tuple[Answer, ...]] = {}

    def of(self, agent: str) -> tuple[Answer, ...]:
        found = self._known.get(agent)
        if found is None:
            found = answers_taken(adapter_for(agent, self.state_dir).keys)
            self._known[agent] = found
        return found


def parse_answer(text: str) -> Answer:
    """yes/y, no/n, always/a → the answer (ValueError otherwise: a usage check)."""
    word = text.strip().lower()
    for answer in Answer:
        if word in (answer, answer[0]):
            return answer
    raise ValueError(f"answer must be yes, no or always, not {text!r}")


def awaits_decision(job: Job, record: LaunchRecord | None, now: float | None = None) -> bool:
    """Whether the job's question waits for a structured decision (``--approvals
    control-room``): Claude's permission hook, until its bound runs out (then the
    agent's own dialog shows, and keys answer it); Codex's app-server request, as long
    as it is pending (its dialog is on screen meanwhile, so keys would work too); an
    ACP session's request always (``--approvals`` aside)."""
    if job.waiting and (job.activity_source or "").startswith(DECIDED_BY_ACP):
        return True
    if record is None or record.approvals != CONTROL_ROOM_APPROVALS or not job.waiting:
        return False
    return _decision_channel(job, record, now) is not None


def _decision_channel(job: Job, record: LaunchRecord, now: float | None) -> Channel | None:
    source = job.activity_source or ""
    if source.startswith(DECIDED_BY_APP_SERVER):
        return Channel.APP_SERVER
    if source.startswith(DECIDED_BY_HOOK):
        waited = (time.time() if now is None else now) - (job.activity_at_ms or 0) / 1000
        return Channel.HOOK if waited < record.approval_wait_sec else None
    return None


def not_waiting(job: Job) -> NotWaitingForPermission:
    """The refusal for a job that asks nothing now (the one wording of it)."""
    doing = job.activity or job.last_event or "none"
    return NotWaitingForPermission(
        f"job {job.job_id} is not waiting for an answer ({job.status}, {doing})"
    )


@dataclass(frozen=True)
class Question:
    """A question a job's agent asks now: the job as read when it was asked about,
    its adapter, the way an answer goes in, and the answers it takes."""

    job: Job
    adapter: AgentAdapter
    channel: Channel
    answers: tuple[Answer, ...]

    @classmethod
    def of(
        cls, job: Job, record: LaunchRecord | None, state_dir: Path, now: float | None = None
    ) -> Question:
        """The job's question; NotWaitingForPermission unless it waits on one (the
        one check that it waits). ``record``: how its agent was started."""
        if not job.waiting:  # waiting implies running (registry/records.py)
            raise not_waiting(job)
        adapter = adapter_for(job.agent, state_dir)
        channel = Channel.ACP if (job.activity_source or "").startswith(DECIDED_BY_ACP) else None
        if channel is None and record is not None and record.approvals == CONTROL_ROOM_APPROVALS:
            channel = _decision_channel(job, record, now)
        if channel is not None:
            return cls(job, adapter, channel, tuple(Answer))
        return cls(job, adapter, Channel.KEYS, answers_taken(adapter.keys))

    def refuse(self, reply: Answer) -> None:
        """NotWaitingForPermission when the agent has no such answer."""
        if reply not in self.answers:
            raise NotWaitingForPermission(f"{self.adapter.display_name} has no '{reply}' answer")
