"""Recording a job's event: the path every transport ends in (CLI, MQTT, bus).

Validate, verify the signature, dedupe by (job_id, seq), append ``job.event`` to
the bus, track seq gaps, note the agent's activity and move the job's status, in
one transaction of the job store. ``registry.jobs.Registry`` holds an
``EventRecorder`` next to its ``JobStore`` and hands it the events it builds
(``publish``, ``observe``) and those that arrive (``record_event``).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from bus.db import now_ms
from registry import activity as activities
from registry.activity import Observation
from registry.bus_types import JOB_EVENT, event_message_id
from registry.errors import (
    DuplicateEvent,
    EventAfterTerminal,
    EventRejected,
    InvalidEvent,
    InvalidJobInput,
    RegistryError,
    TopicMismatch,
)
from registry.events import Event, event_from_dict, parse_event
from registry.jobstore import AGENT_MOVED, JobStore
from registry.records import Job, account_seq, iso_from_ms
from registry.signing import verify
from registry.vocabulary import FINAL_JOB_STATUSES, Activity, EventType, JobStatus

log = logging.getLogger(__name__)

Via = Literal["cli", "mqtt", "bus"]


@dataclass(frozen=True)
class Recorded:
    """What recording one event did: its bus seq, the job's status after it,
    and how many of the job's event seqs are now known to be missing."""

    job_id: str
    seq: int
    event: Event
    bus_seq: int
    status: str
    missing_count: int


class EventRecorder:
    """Records events into the jobs of one ``JobStore``: each in the store's write
    transaction, so the event, the job's row and its status move commit together."""

    def __init__(self, store: JobStore) -> None:
        self.store = store

    def record_event(
        self,
        raw: bytes | str | Mapping[str, Any] | Event,
        *,
        via: Via = "cli",
        topic: str | None = None,
    ) -> Recorded:
        """The path every transport ends in: validate, verify, dedupe, append, move status.

        ``topic`` is the MQTT topic the event arrived on: it must be its job's
        own. Raises InvalidEvent (malformed), SignatureError (missing/forged when
        the job signs), JobNotFound, TopicMismatch, DuplicateEvent (seq already
        recorded), EventAfterTerminal (the job already ended), IllegalTransition.
        Nothing is stored when it raises.
        """
        event = _parse(raw)
        with self.store.write() as conn:
            if via != "cli":
                self.store.after_commit(lambda: self.store.audit.record_received(event, source=via))
            return self.record(conn, event, via, topic=topic)

    def record_events(
        self,
        raws: Iterable[bytes | str | Mapping[str, Any] | Event],
        *,
        via: Via = "cli",
        topics: Iterable[str | None] | None = None,
    ) -> list[Recorded | RegistryError]:
        """Record a batch in ONE transaction: one commit for many events (group commit).

        ``topics`` (one per event, when they came over MQTT) are where each arrived.
        Each event keeps ``record_event``'s semantics and gets its own verdict,
        in order: its ``Recorded``, or the RegistryError that refused it (the
        same one ``record_event`` would raise). Each runs in its own SAVEPOINT,
        so a refused event rolls back only itself, never the others. Anything
        else (the database locked, a disk error) raises and stores nothing:
        the caller retries the whole batch.
        """
        parsed: list[Event | RegistryError] = []
        for raw in raws:
            try:
                parsed.append(_parse(raw))
            except RegistryError as exc:
                parsed.append(exc)
        arrived = list(topics) if topics is not None else [None] * len(parsed)
        if len(arrived) != len(parsed):
            raise ValueError(f"{len(arrived)} topics for {len(parsed)} events")
        verdicts: list[Recorded | RegistryError] = []
        with self.store.write() as conn:
            jobs: dict[str, Job] = {}  # each job read once per batch (we hold the write lock)
            for item, topic in zip(parsed, arrived, strict=True):
                if isinstance(item, RegistryError):
                    verdicts.append(item)
                else:
                    verdicts.append(self._record_savepoint(conn, item, via, jobs, topic))
        return verdicts

    def _record_savepoint(
        self,
        conn: sqlite3.Connection,
        event: Event,
        via: Via,
        jobs: dict[str, Job],
        topic: str | None,
    ) -> Recorded | RegistryError:
        """One event of a batch: released if recorded, rolled back (with its queued
        audit lines and its cached job) if refused."""
        queued = len(self.store.records.queued)
        conn.execute("SAVEPOINT record_event")
        try:
            if via != "cli":
                self.store.after_commit(lambda: self.store.audit.record_received(event, source=via))
            recorded = self.record(conn, event, via, jobs, topic=topic)
        except RegistryError as exc:
            conn.execute("ROLLBACK TO record_event")
            conn.execute("RELEASE record_event")
            del self.store.records.queued[queued:]
            jobs.pop(event.job_id, None)
            return exc
        conn.execute("RELEASE record_event")
        return recorded

    def record(
        self,
        conn: sqlite3.Connection,
        event: Event,
        via: Via,
        jobs: dict[str, Job] | None = None,
        *,
        topic: str | None = None,
    ) -> Recorded:
        """Record one event in the caller's transaction. ``jobs`` caches the rows
        this transaction already read and wrote, so a batch reads each job once."""
        cached = jobs.get(event.job_id) if jobs is not None else None
        job = cached if cached is not None else self.store.require(conn, event.job_id)
        where = f"job {job.job_id} seq {event.seq} ({event.event})"
        if topic is not None and topic != job.events_topic:
            raise TopicMismatch(
                f"event for job {job.job_id} (seq {event.seq}) arrived on {topic}, "
                f"not on its own topic {job.events_topic}"
            )
        if job.auth_token is not None:
            verify(event, job.auth_token)
        message_id = event_message_id(job.job_id, event.seq)
        held = conn.execute(
            "SELECT type, correlation_id FROM messages WHERE id = ?", (message_id,)
        ).fetchone()
        if held is not None:
            if tuple(held) != (JOB_EVENT, job.job_id):  # taken before such ids were reserved
                raise EventRejected(
                    f"seq {event.seq} of job {job.job_id} cannot be recorded: its bus id "
                    f"{message_id} is held by a {held[0]!r} message"
                )
            raise DuplicateEvent(f"duplicate seq {event.seq} for job {job.job_id}")
        if event.seq <= job.seq_floor:
            log.info("ignoring %s via %s: from before the resume", where, via)
            raise EventAfterTerminal(
                f"{where} belongs to an attempt before the job was resumed; ignored"
            )
        if job.status in FINAL_JOB_STATUSES:
            if not _came_before_the_end(job, event):
                log.info("ignoring %s via %s: job already %s", where, via, job.status)
                raise EventAfterTerminal(f"{where} arrived after the job was {job.status}; ignored")
            return self._record_late(conn, job, event, message_id, jobs)
        bus_seq = self.store.announce(
            conn,
            JOB_EVENT,
            job.job_id,
            event.to_dict(),
            message_id=message_id,
            from_agent=job.job_id,
        )
        missing, max_seen = account_seq(job.missing_seqs, job.max_seen_seq, event.seq)
        stamp = iso_from_ms(now_ms())
        conn.execute(
            "UPDATE jobs SET last_seq = MAX(last_seq, ?), max_seen_seq = ?, missing_seqs = ?, "
            "last_event = ?, last_event_at = ?, last_detail = ?, updated_at = ? "
            "WHERE job_id = ?",
            (
                event.seq,
                max_seen,
                json.dumps(missing),
                event.event,
                event.timestamp,
                event.detail,
                stamp,
                job.job_id,
            ),
        )
        if missing != job.missing_seqs and len(missing) > len(job.missing_seqs):
            log.info("job %s: gap before seq %d", job.job_id, event.seq)
        # The row as the UPDATE left it, without reading it back.
        job = replace(
            job,
            last_seq=max(job.last_seq, event.seq),
            max_seen_seq=max_seen,
            missing_seqs=missing,
            last_event=event.event,
            last_event_at=event.timestamp,
            last_detail=event.detail,
            updated_at=stamp,
        )
        reason = f"{AGENT_MOVED} {event.event} (seq {event.seq})"
        if job.status == JobStatus.PENDING:
            start_reason = reason if not event.is_terminal else f"{reason} without started"
            self.store.move(conn, job, JobStatus.RUNNING, start_reason, transition="start")
            job = self.store.require(conn, job.job_id)
        elif not event.is_terminal:
            job = self.store.extend_due(conn, job)
        if job.status == JobStatus.RUNNING and not event.is_terminal:
            job = self._note_activity(conn, job, event)
        if event.is_terminal:
            ended = event.event == EventType.COMPLETED
            target = JobStatus.COMPLETED if ended else JobStatus.ERROR
            if event.event == EventType.ERROR and event.detail:
                reason = f"{reason}: {event.detail[:200]}"
            result = {"event": event.event, "seq": event.seq, "detail": event.detail}
            self.store.move(conn, job, target, reason, result=result)
            job = self.store.require(conn, job.job_id)
        if jobs is not None:
            jobs[job.job_id] = job
        return Recorded(job.job_id, event.seq, event, bus_seq, job.status, job.missing_count)

    def _record_late(
        self,
        conn: sqlite3.Connection,
        job: Job,
        event: Event,
        message_id: str,
        jobs: dict[str, Job] | None,
    ) -> Recorded:
        """An event from before the job's terminal event that arrived after it (a
        broker lost it and its publisher sent it again): it joins the history and
        closes its gap; the job's status and last event stay as the end left them."""
        bus_seq = self.store.announce(
            conn, JOB_EVENT, job.job_id, event.to_dict(),
            message_id=message_id, from_agent=job.job_id,
        )  # fmt: skip
        missing, max_seen = account_seq(job.missing_seqs, job.max_seen_seq, event.seq)
        conn.execute(
            "UPDATE jobs SET max_seen_seq = ?, missing_seqs = ? WHERE job_id = ?",
            (max_seen, json.dumps(missing), job.job_id),
        )
        job = replace(job, max_seen_seq=max_seen, missing_seqs=missing)
        if jobs is not None:
            jobs[job.job_id] = job
        return Recorded(job.job_id, event.seq, event, bus_seq, job.status, job.missing_count)

    def _note_activity(self, conn: sqlite3.Connection, job: Job, event: Event) -> Job:
        """The activity an event shows: its own for an ``activity`` event, working for
        started/progress, waiting for permission_required; the row as it now is."""
        seen = _activity_shown(event, job.agent)
        if seen is not None:  # a remote agent's idle after a block counts as here
            seen = seen.after(activities.observation_of(
                job.activity, job.activity_source, job.activity_data
            ))  # fmt: skip
        if seen is None or seen.same_as(job.activity, job.activity_data):
            return job
        at_ms = now_ms()
        activities.store_change(conn, job.job_id, seen, at_ms, event.seq)
        return replace(
            job,
            activity=seen.activity,
            activity_at_ms=at_ms,
            activity_source=seen.source,
            activity_data=seen.to_data(),
        )


def _came_before_the_end(job: Job, event: Event) -> bool:
    """Whether ``event`` of a job its own terminal event ended has a seq below that
    terminal's: history that arrived late, not news from after the end."""
    if job.status not in (JobStatus.COMPLETED, JobStatus.ERROR) or not isinstance(job.result, dict):
        return False
    terminal = job.result.get("seq")
    return isinstance(terminal, int) and event.seq < terminal


def _activity_shown(event: Event, agent: str) -> Observation | None:
    """What an event says about its agent's activity (None: nothing)."""
    if event.event == EventType.ACTIVITY:
        try:
            return Observation.from_data(event.data)
        except InvalidJobInput as exc:
            raise InvalidEvent(f"activity event: {exc}") from None
    source = f"publish:{agent}:{event.event}"
    if event.event in (EventType.STARTED, EventType.PROGRESS):
        return Observation(Activity.WORKING, source)
    if event.event == EventType.PERMISSION_REQUIRED:
        return Observation(Activity.WAITING, source, question=event.detail)
    return None


def _parse(raw: bytes | str | Mapping[str, Any] | Event) -> Event:
    """An Event from any transport's form of it (InvalidEvent if malformed)."""
    if isinstance(raw, Event):
        return raw
    if isinstance(raw, Mapping):
        return event_from_dict(dict(raw))
    return parse_event(raw)
