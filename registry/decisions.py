"""The decision on an agent's permission question: one record, owned by the registry.

A decision is a ``job.decision`` bus message (:attr:`MessageType.JOB_DECISION`,
which no sender may forge: ``registry/bus_types.py``) correlated to its job.
The control room or `orchestrate answer` posts it; a waiting Claude hook or the
Codex app-server bridge reads the newest one posted after its question was
recorded and hands it to the agent. Both sides go through this module and the
bus API, so the record's shape is written once.

>>> Decision("j1", Answer.ALWAYS, "cli", "", 7).allow
True
"""

from __future__ import annotations

from dataclasses import dataclass

from bus.messages import Bus, Message, Outgoing
from registry.vocabulary import Answer, MessageType

PAGE = 1000
"""Messages read per bus query while catching up with a job's decisions."""
UNREADABLE = "unreadable decision"


@dataclass(frozen=True)
class Decision:
    """What was decided for ``job_id``'s question, and by whom.

    ``readable`` is False for a record whose payload cannot be read: the agent is
    then left to show its own dialog. A readable record naming no known answer
    has ``answer`` None, which allows nothing.
    """

    job_id: str
    answer: Answer | None
    by: str
    reason: str
    seq: int
    readable: bool = True

    @property
    def allow(self) -> bool:
        """Whether the agent may go ahead (yes, or always)."""
        return self.answer in (Answer.YES, Answer.ALWAYS)


def post_decision(bus: Bus, job_id: str, answer: Answer, *, by: str, reason: str = "") -> int:
    """Post ``answer`` as the decision on ``job_id``'s question; its bus seq."""
    payload = {"job_id": job_id, "answer": str(answer), "by": by}
    if reason:
        payload["reason"] = reason
    published = bus.publish(
        Outgoing(
            type=MessageType.JOB_DECISION, from_agent=by, correlation_id=job_id, payload=payload
        )
    )
    return published.seq


def decision_of(message: Message) -> Decision:
    """A ``job.decision`` message as a record (unreadable ones say so)."""
    job_id = message.correlation_id or ""
    payload = message.payload
    if message.payload_error is not None or not isinstance(payload, dict):
        return Decision(job_id, None, message.from_agent, UNREADABLE, message.seq, readable=False)
    word = payload.get("answer")
    if not isinstance(word, str):
        return Decision(job_id, None, message.from_agent, UNREADABLE, message.seq, readable=False)
    try:
        answer: Answer | None = Answer(word)
    except ValueError:
        answer = None
    by = payload.get("by")
    return Decision(
        job_id,
        answer,
        by if isinstance(by, str) else message.from_agent,
        str(payload.get("reason", "")),
        message.seq,
    )


class DecisionReader:
    """Follows one job's decisions from a bus seq on: each look reads only what was
    posted since the last one (a question can stay pending for hours on a busy
    bus), and keeps the newest decision seen."""

    def __init__(self, bus: Bus, job_id: str, after_seq: int) -> None:
        self.bus = bus
        self.job_id = job_id
        self.cursor = after_seq
        self.newest: Decision | None = None

    def latest(self) -> Decision | None:
        """The newest decision for the job posted after the starting seq, if any.

        The look ends at the bus's newest seq, read first, and the next one starts
        there: messages about other jobs are passed over once, not on every look."""
        upto = self.bus.latest_seq()
        while self.cursor < upto:
            messages = self.bus.read_after(self.cursor, limit=PAGE, task=self.job_id, upto_seq=upto)
            for message in messages:
                if (
                    message.type == MessageType.JOB_DECISION
                    and message.correlation_id == self.job_id
                ):
                    self.newest = decision_of(message)
            if len(messages) < PAGE:
                self.cursor = upto
            else:
                self.cursor = messages[-1].seq
        return self.newest


def latest_decision(bus: Bus, job_id: str, after_seq: int) -> Decision | None:
    """The newest decision for ``job_id`` posted after ``after_seq`` (one look)."""
    return DecisionReader(bus, job_id, after_seq).latest()
