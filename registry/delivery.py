"""End-to-end delivery of a remote agent's events: its outbox, and the registry's confirmations.

An event counts as delivered when it is in the registry, not when a broker
has it (a broker killed before its autosave loses what it acknowledged). So
an agent on another host keeps each event in a durable outbox
(``bus.outbox``, one stream per job, positions = seqs) until the control room
confirms it, and the control room's ingest bridge confirms, after each
commit, what the registry holds of the job: a retained message on
``<topic_prefix>/applied`` beside the job's ``<topic_prefix>/events``.

A confirmation says: every seq up to ``through`` is settled (recorded, or from
an attempt before a resume) except the ``missing`` ranges; ``closed`` once the
job takes no more events (cancelled, or ended with nothing missing before
its terminal event). This module maps jobs onto those generic terms; it
imports no database code of the registry, so the agent's publish stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bus.outbox import Confirmation, Outbox, OutboxMessage
from registry.errors import InvalidEvent
from registry.events import Event
from registry.remote_seq import reserved
from registry.vocabulary import JobStatus

if TYPE_CHECKING:
    from registry.records import Job

OUTBOX_DIR = "outbox"
OUTBOX_NAME = "outbox.db"
EVENTS_SUFFIX = "/events"
APPLIED_SUFFIX = "/applied"
_ENDED_BY_EVENT = (JobStatus.COMPLETED, JobStatus.ERROR)


def outbox_path(state_dir: Path) -> Path:
    """Where an agent host keeps the events its control room has not confirmed yet."""
    return state_dir / OUTBOX_DIR / OUTBOX_NAME


def applied_topic(events_topic: str) -> str:
    """The confirmation topic beside a job's events topic (``a/b/events`` -> ``a/b/applied``)."""
    if not events_topic.endswith(EVENTS_SUFFIX):
        raise InvalidEvent(f"an events topic ends with {EVENTS_SUFFIX!r}: {events_topic!r}")
    return events_topic[: -len(EVENTS_SUFFIX)] + APPLIED_SUFFIX


def confirmation_for(job: Job, epoch: str) -> Confirmation:
    """What the registry holds of ``job``'s events, as its confirmation."""
    floor = job.seq_floor
    through = max(job.max_seen_seq, floor)
    missing = tuple((max(a, floor + 1), b) for a, b in job.missing_seqs if b > floor)
    if job.status == JobStatus.CANCELLED:
        closed = True
    elif job.status in _ENDED_BY_EVENT:
        result = job.result if isinstance(job.result, dict) else {}
        terminal = result.get("seq")
        # Ended by its own terminal event: closed once nothing before it is missing
        # (the registry still records those late events). Ended otherwise: closed.
        closed = not isinstance(terminal, int) or not any(a <= terminal for a, _ in missing)
    else:
        closed = False
    return Confirmation(through, missing, closed, epoch)


class AgentOutbox:
    """An agent host's outbox of job events (``<state dir>/outbox/outbox.db``).

    >>> # box = AgentOutbox(state_dir)
    >>> # queued = box.queue("ab12cd34", "jobs/ab12cd34/events", broker.url, make_event)
    """

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.outbox = Outbox(outbox_path(state_dir))

    def queue(
        self,
        job_id: str,
        events_topic: str,
        destination: str,
        make_event: Callable[[int], Event],
    ) -> OutboxMessage:
        """Take the job's next seq and store its event, durably, in one step.

        ``make_event(seq)`` builds (and signs) the event; if it raises, no seq
        is used. The seq counter file (``registry.remote_seq``) stays the
        authority shared with older versions: the seq is the next after both it
        and the outbox's own count, and the file is advanced once the event is
        stored (a crash in between is healed by the outbox's count).
        """
        confirm_topic = applied_topic(events_topic)

        def build(seq: int) -> tuple[str, bytes, bool]:
            event = make_event(seq)
            return events_topic, event.to_bytes(), event.is_terminal

        with reserved(self.state_dir, job_id) as counter:
            message = self.outbox.append(
                job_id, confirm_topic, destination, build, floor=counter.value
            )
            counter.store(message.position, durable=False)  # the outbox holds it durably
        return message

    def close(self) -> None:
        self.outbox.close()
