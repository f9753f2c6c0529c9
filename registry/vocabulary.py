"""The words orchestrate's records are made of, each spelled once.

A job's status, an agent's activity, an answer, a review's state and every bus
message type the registry owns are ``StrEnum`` members here. A ``StrEnum``
member *is* its string (``JobStatus.RUNNING == "running"``), so records, SQL
rows and JSON keep their text while code names the word instead of repeating
it: a newcomer adding a job status edits :class:`JobStatus` and the state
machine in ``registry/states.py`` that uses it, and a typo is an
``AttributeError`` at import, not a comparison that is silently never true.

>>> JobStatus.RUNNING == "running", JobStatus("completed") in FINAL_JOB_STATUSES
(True, True)
>>> [answer.value for answer in Answer]
['yes', 'no', 'always']
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class JobStatus(StrEnum):
    """Where a job is in its life (``registry/states.py`` JOB says how it moves)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    ERROR = "error"
    CANCELLED = "cancelled"


FINAL_JOB_STATUSES: Final = frozenset({JobStatus.COMPLETED, JobStatus.ERROR, JobStatus.CANCELLED})
"""A job in one of these has ended: nothing moves it on but a resume or a follow-up."""


class SessionStatus(StrEnum):
    """A tmux agent session's state (``registry/states.py`` SESSION)."""

    RUNNING = "running"
    STOPPED = "stopped"
    TERMINATED = "terminated"
    ARCHIVED = "archived"


class ReviewState(StrEnum):
    """A worker's review round (``registry/states.py`` WORKER): upper case, as stored."""

    ASSIGNED = "ASSIGNED"
    WORKING = "WORKING"
    IN_REVIEW = "IN_REVIEW"
    APPROVED = "APPROVED"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"


class Activity(StrEnum):
    """What an agent is doing now, as observed (``registry/activity.py``)."""

    STARTING = "starting"
    WORKING = "working"
    WAITING = "waiting"
    IDLE = "idle"
    STALLED = "stalled"
    EXITED = "exited"
    INTERRUPTED = "interrupted"
    UNKNOWN = "unknown"
    """Its screen changed to one no screen rule explains, and no structured signal
    said what it does since: the pane's last lines say (app/supervision/observer.py)."""
    BLOCKED = "blocked"
    """The agent stopped after it was refused something it wanted to do (Claude Code's
    auto mode blocked a command): no dialog to answer, but it needs a person
    (``registry/states.py`` ``after_block``)."""
    PAUSED = "paused"
    """orchestrate stopped its turn and holds it until a person says go on (``job
    resume``): the job crossed its budget (:class:`PauseReason`)."""


class PauseReason(StrEnum):
    """Why orchestrate paused a job (activity ``paused``): the source kind of the
    pause's observation (``budget:claude``), so `job why` and the rows can say it."""

    BUDGET = "budget"


class Answer(StrEnum):
    """A person's (or a rule's) answer to an agent's question."""

    YES = "yes"
    NO = "no"
    ALWAYS = "always"


class PolicyDecision(StrEnum):
    """What an approval policy rule (or its reviewer) says of a question (app/policy/)."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


class DecisionSource(StrEnum):
    """Who decided a question, as `job why` and the audit log say it: a policy rule,
    the policy's reviewer command, or a person."""

    POLICY = "policy"
    REVIEWER = "reviewer"
    PERSON = "person"


class EventType(StrEnum):
    """The ``event`` field of a job's event (wire schema v1)."""

    STARTED = "started"
    PROGRESS = "progress"
    PERMISSION_REQUIRED = "permission_required"
    COMPLETED = "completed"
    ERROR = "error"
    ACTIVITY = "activity"
    """An observed change of what the agent is doing (``registry/activity.py``)."""
    INPUT = "input"
    """Text a person sent to the agent (the control room's prompt box, ``send``)."""


class NodeLeft(StrEnum):
    """How a fleet node went offline (``registry/nodes.py``)."""

    STOPPED = "stopped"
    """It said goodbye (``node stop``, SIGTERM)."""
    LOST = "lost"
    """Its last will: the broker lost the connection (killed, cut off)."""


class FleetVerb(StrEnum):
    """What a signed fleet command asks a node to do (``registry/fleet_commands.py``)."""

    TAKE = "take"
    """Start a job placed on the node (its pane and work dir on the node's host)."""
    ANSWER = "answer"
    """Answer the question the job's agent waits on."""
    SEND = "send"
    """Give the job's agent free text."""
    CANCEL = "cancel"
    """Cancel the job and stop its agent."""
    RESUME = "resume"
    """Start a failed, cancelled or interrupted job's agent again (a new attempt)."""


class MessageType(StrEnum):
    """Bus message types the registry and the control room write; no sender may.

    ``registry/bus_types.py`` refuses a sender's message under any of their
    prefixes.
    """

    JOB_EVENT = "job.event"
    """An event the registry accepted (validated, verified, deduplicated)."""
    JOB_REGISTERED = "job.registered"
    JOB_STATUS = "job.status"
    JOB_FLAG = "job.flag"
    """The control room's watcher flags a quiet job."""
    JOB_DECISION = "job.decision"
    """The answer to a permission request, which a waiting agent hook obeys: a forged
    one would approve a command."""
    JOB_USAGE = "job.usage"
    """The tokens of one model message of a job's agent, read from its transcript."""
    SESSION_STATUS = "session.status"
    REVIEW_STATUS = "review.status"
    """A work-tree job's review moved (``registry/review.py``): a forged one would
    show a review as approved."""
    QUEUE_NUDGE = "queue.nudge"
    CONTROL_STARTED = "control.started"
    """A control room started (the history counts restarts)."""
    CONTROL_NOTIFIED = "control.notified"
    """A needs-you or finished signal was announced to the notify command, filed under
    "<job_id>:notify:<mark>" so it is announced once (``registry/needs_you.py``)."""
