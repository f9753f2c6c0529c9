"""The control room's rows from registry records: a job's table line, a stream line.

Pure functions from the registry's frozen records (``Job``, bus ``Message``,
``TimelineEvent``) to the TUI's frozen rows (``JobRow``, ``EventRow``): no I/O,
so the real source and its tests share them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from app.tui.source import EventRow, JobRow
from bus.messages import Message
from registry.activity import Observation, describe_source, interruption, observation_of
from registry.control_room import TimelineEvent
from registry.errors import RegistryError
from registry.jobstore import moved_by_agent
from registry.needs_you import watched
from registry.records import Job
from registry.vocabulary import (
    FINAL_JOB_STATUSES,
    Activity,
    Answer,
    EventType,
    JobStatus,
    MessageType,
    ReviewState,
)

MISSING_SEQS_SHOWN = 1000

# What a work-tree job's row says while its review waits for a person.
REVIEW_PROGRESS: Mapping[str, str] = {
    ReviewState.IN_REVIEW: "in review: press v",
    ReviewState.APPROVED: "approved, not merged yet: press v",
}


def _ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _parse_iso(stamp: str | None, fallback_ms: int) -> datetime:
    try:
        return datetime.fromisoformat(stamp) if stamp else _ts(fallback_ms)
    except ValueError:
        return _ts(fallback_ms)


def job_row(
    job: Job,
    status_reason: str | None = None,
    answers: tuple[Answer, ...] = (Answer.YES, Answer.NO),
    review: str | None = None,
    budget: str | None = None,
) -> JobRow:
    """The jobs-table line for one registry record. `status_reason`: why a final
    job got its status when no event of its agent says so (a cancel, the control
    room failing a job whose pane exited); the row then shows that instead of an
    event from before (a cancelled job still read "permission_required").
    `review`: a work-tree job's review state; one waiting for a person says so.
    `budget`: its spend against its budget ("$0.12 spent of $0.50"), shown first."""
    last_event, detail = job.last_event, job.last_detail or ""
    if status_reason is not None and job.status in FINAL_JOB_STATUSES:
        last_event, detail = job.status, status_reason
    detail = REVIEW_PROGRESS.get(review or "", detail)
    running = job.status == JobStatus.RUNNING
    interrupted = interruption(job.activity, job.activity_data) if running else None
    if interrupted is not None:  # why it stopped, not its last progress
        detail = interrupted
    if running and job.activity == Activity.BLOCKED:  # what was refused ("auto mode blocked …")
        block = observation_of(job.activity, job.activity_source, job.activity_data)
        detail = block.summary() if block is not None else detail
    if running and job.activity == Activity.PAUSED:  # why ("budget $0.50 reached …")
        held = observation_of(job.activity, job.activity_source, job.activity_data)
        detail = held.question if held is not None and held.question else detail
    if budget:
        detail = f"{budget} · {detail}" if detail else budget
    return JobRow(
        job_id=job.job_id,
        status=JobStatus(job.status),
        agent=job.agent,
        agent_session=job.agent_session,
        created_at=_ts(job.created_at_ms),
        updated_at=_parse_iso(job.updated_at, job.created_at_ms),
        last_event=last_event,
        progress_detail=detail,
        missing_events=job.missing_count,
        waiting_permission=job.waiting,
        activity=job.activity if running else None,
        question=_question(job),
        state_since=_ts(seen.since_ms) if (seen := watched(job)).mark else None,
        asked=_asked(job),
        answers=answers,
    )


def _question(job: Job) -> str:
    """What a waiting job waits on, in a few words (empty for any other job)."""
    if not job.waiting:
        return ""
    seen = observation_of(job.activity, job.activity_source, job.activity_data)
    return seen.summary() if seen is not None else job.last_detail or ""


def _asked(job: Job) -> tuple[tuple[str, str], ...]:
    """What a waiting job asks, for the inbox: the question, tool, command, who saw it."""
    if not job.waiting:
        return ()
    seen = observation_of(job.activity, job.activity_source, job.activity_data)
    published = f"its agent's own {EventType.PERMISSION_REQUIRED} event"
    if seen is None:
        return (("question", job.last_detail or ""), ("seen by", published))
    pairs = [("question", seen.question), ("tool", seen.tool), ("command", seen.command)]
    by = published if seen.source.startswith("publish:") else describe_source(seen.source)
    pairs.append(("seen by", by))
    return tuple((label, text) for label, text in pairs if text)


def event_detail(payload: Mapping[str, Any]) -> str:
    """An event's detail as the stream and the timeline show it; a wait says what it
    waits on ("waiting: Bash `npm test`"), its detail alone reads "waiting"."""
    detail = str(payload.get("detail", ""))
    data = payload.get("data")
    if payload.get("event") != EventType.ACTIVITY or not isinstance(data, dict):
        return detail
    if data.get("activity") != Activity.WAITING:
        return detail
    try:
        about = Observation.from_data(data).summary()
    except RegistryError:  # not an activity it knows: its detail as written
        return detail
    return f"{detail}: {about}" if about else detail


def event_row(message: Message) -> EventRow | None:
    """A stream line for a `job.event` message, for a status change nobody's event
    explains (a cancel, a resume, an expired lease), or for a review's move; None
    for the rest."""
    payload = message.payload if isinstance(message.payload, dict) else {}
    job_id = str(message.correlation_id or payload.get("job_id", ""))
    if message.type == MessageType.JOB_EVENT:
        return timeline_row(job_id, TimelineEvent(message.seq, message.ts_ms, payload))
    reason = str(payload.get("reason", ""))
    # a work-tree job's review moved (registry/review.py's type: not in the vocabulary yet)
    if message.type == MessageType.REVIEW_STATUS and payload.get("to"):
        detail = f"{payload.get('from') or 'new'} → {payload.get('to')}: {reason}"
        return EventRow(seq=0, ts=_ts(message.ts_ms), job_id=job_id, event="review", detail=detail)
    if message.type == MessageType.JOB_STATUS and not moved_by_agent(reason):
        detail = f"{payload.get('from')} → {payload.get('to')}: {reason}"
        return EventRow(seq=0, ts=_ts(message.ts_ms), job_id=job_id, event="status", detail=detail)
    return None


def expand_missing(ranges: Sequence[Sequence[int]], limit: int = MISSING_SEQS_SHOWN) -> list[int]:
    """[[3, 5], [9, 9]] -> [3, 4, 5, 9], at most `limit` of them."""
    seqs: list[int] = []
    for first, last in ranges:
        seqs.extend(range(first, min(last, first + limit - len(seqs) - 1) + 1))
        if len(seqs) >= limit:
            break
    return seqs


def timeline_row(job_id: str, entry: TimelineEvent) -> EventRow:
    """A line of the job page's timeline, from one event the bus holds."""
    payload = entry.payload
    return EventRow(
        seq=int(payload.get("seq", 0)),
        ts=_ts(entry.ts_ms),
        job_id=job_id,
        event=str(payload.get("event", "?")),
        detail=event_detail(payload),
    )
