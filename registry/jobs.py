"""The job registry: work distribution (pick, leases) and event recording over ``JobStore``.

Recording an event is the path every transport ends in (CLI, MQTT, bus):
validate, verify the signature, dedupe by (job_id, seq), append ``job.event``
to the bus, track seq gaps and move the job's status, in one transaction.
"""

from __future__ import annotations

import builtins
import json
import logging
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from bus import claims
from bus.db import now_ms
from bus.errors import StaleClaim
from registry import activity as activities
from registry.activity import Observation
from registry.bus_types import JOB_EVENT, event_message_id
from registry.errors import (
    DuplicateEvent,
    EventAfterTerminal,
    EventRejected,
    InvalidEvent,
    InvalidJobInput,
    NoPendingJob,
    RegistryError,
    TopicMismatch,
)
from registry.events import Event, build_event, event_from_dict, parse_event
from registry.jobstore import AGENT_MOVED, FINAL_STATUSES, JobStore
from registry.records import Job, account_seq, check_label, iso_from_ms
from registry.signing import sign, verify

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


class Registry(JobStore):
    """The registry a command, the TUI or a transport talks to."""

    def pick(self, agent_session: str, *, claimer: str | None = None) -> Job:
        """Claim the oldest pending job of ``agent_session`` and flip it to running.

        One transaction: two processes sharing a label never get the same job,
        and distinct labels never see each other's work. Expired leases of
        that label are swept back to pending first. NoPendingJob if none.
        """
        return self.pick_claim(agent_session, claimer=claimer)[0]

    def pick_claim(
        self, agent_session: str, *, claimer: str | None = None
    ) -> tuple[Job, claims.Claim]:
        """``pick``, also returning the lease claim a queue worker renews and completes."""
        check_label("agent_session", agent_session)
        who = claimer or agent_session
        with self._write() as conn:
            at_ms = now_ms()  # one moment for the sweep and the claim
            self._expire(conn, agent_session, at_ms)
            for _ in range(1000):
                claim = claims.claim_next(conn, agent_session, who, at_ms=at_ms)
                if claim is None:
                    break
                job = self._load(conn, claim.task_id)
                if job is not None and job.status == "running":
                    # Its task was given back under it (a bus-level release): re-queue
                    # the job, then claim again. Settling it would strand the job in
                    # running with no task to expire.
                    reason = "its task was given back"
                    self._move(conn, job, "pending", reason, transition="release")
                    continue
                if job is None or job.status != "pending":
                    # A task whose job is gone or already moved on: settle it, look again.
                    claims.settle(conn, claim.task_id)
                    continue
                claim = claims.renew(conn, claim, lease_ms=job.timeout_sec * 1000)
                self._move(conn, job, "running", f"picked by {who}", transition="pick")
                return self._require(conn, job.job_id), claim
        raise NoPendingJob(f"no pending job for agent session {agent_session!r}")

    def expire_leases(self, agent_session: str | None = None) -> builtins.list[str]:
        """Move running jobs whose lease ran out back to pending (retry_count + 1)."""
        with self._write() as conn:
            return self._expire(conn, agent_session)

    def release_claim(self, claim: claims.Claim) -> None:
        """A queue worker gives its job back unfinished (shutting down): the job goes
        back to pending at once, as when its lease runs out. StaleClaim if the claim
        is no longer current."""
        with self._write() as conn:
            job = self._require(conn, claim.task_id)
            claims.release(conn, claim)
            if job.status == "running":
                reason = f"given back by {claim.agent}"
                self._move(conn, job, "pending", reason, transition="release")

    def heartbeat(self, claim: claims.Claim, lease_sec: int | None = None) -> claims.Claim:
        """Renew a worker's claim on a job and the job's lease (seed 004 heartbeat).

        StaleClaim if the claim was lost (its lease expired and it was swept or re-picked).
        """
        with self._write() as conn:
            job = self._require(conn, claim.task_id)
            lease_ms = (lease_sec or job.timeout_sec) * 1000
            renewed = claims.renew(conn, claim, lease_ms=lease_ms)
            conn.execute(
                "UPDATE jobs SET lease_until = ?, lease_until_ms = ? WHERE job_id = ?",
                (iso_from_ms(renewed.lease_until_ms), renewed.lease_until_ms, job.job_id),
            )
            return renewed

    def complete_claim(
        self, claim: claims.Claim, result: Any = None, *, status: str = "completed"
    ) -> bool:
        """A queue worker finished its job: fenced by the claim's attempt.

        False when this same claim already completed it (an idempotent retry);
        StaleClaim when the claim is no longer current, or someone else ended the
        job otherwise while the worker held it (cancelled, failed by the control
        room, set by hand): its result is not recorded.
        """
        with self._write() as conn:
            job = self._require(conn, claim.task_id)
            # Ending a job settles its task under the claim, which would then read
            # as this worker's own earlier completion.
            if job.status in FINAL_STATUSES and job.status != status:
                raise StaleClaim(
                    f"job {job.job_id} is {job.status}, not {status}, since "
                    f"{claim.agent} took it: its result is not recorded"
                )
            if not claims.complete(conn, claim, result):
                return False
            reason = f"{status} by {claim.agent} (attempt {claim.attempt})"
            self._move(conn, job, status, reason, result=result)
            return True

    def _expire(
        self, conn: sqlite3.Connection, agent_session: str | None, at_ms: int | None = None
    ) -> builtins.list[str]:
        moved = []
        for task in claims.expired(conn, queue=agent_session, at_ms=at_ms):
            job = self._load(conn, task.task_id)
            if job is None or job.status != "running":
                continue
            self._move(conn, job, "pending", "lease expired", transition="lease_expired")
            moved.append(job.job_id)
        return moved

    def next_seq(self, job_id: str) -> int:
        """Allocate the job's next event seq (persisted, so it survives restarts)."""
        with self._write() as conn:
            job = self._require(conn, job_id)
            conn.execute(
                "UPDATE jobs SET last_seq = ? WHERE job_id = ?", (job.last_seq + 1, job_id)
            )
            return job.last_seq + 1

    def publish(
        self,
        job_id: str,
        event: str,
        detail: str = "",
        data: Mapping[str, Any] | None = None,
        *,
        token: str | None = None,
    ) -> Recorded:
        """Build the job's next-seq event, sign it, record it, audit it as ``published``.

        ``token`` (a remote agent's ORCHESTRATE_JOB_TOKEN) overrides the job's
        own. Seq allocation and recording are one transaction, so a refused
        event leaves no gap.
        """
        with self._write() as conn:
            job = self._require(conn, job_id)
            built = build_event(job_id, job.last_seq + 1, event, detail, dict(data or {}))
            key = token or job.auth_token
            if key:
                built = sign(built, key)
            signed = built
            self._after_commit(lambda: self.audit.record_published(signed))
            return self._record(conn, built, "cli")

    def observe(self, job_id: str, observation: Observation) -> Recorded | None:
        """Record what the job's agent is doing, as a signed ``activity`` event.

        A repeated signal for the state the job is already in is no change:
        None, and no seq is used. So is any sighting once the job is not
        running (a hook firing after a cancel). The event is signed with the
        job's own token, as `publish` signs, so every transport treats it alike.
        """
        with self._write() as conn:
            job = self._require(conn, job_id)
            current = activities.observation_of(
                job.activity, job.activity_source, job.activity_data
            )
            if (
                job.status != "running"
                or observation.same_as(job.activity, job.activity_data)
                or observation.defers_to(current)
            ):
                return None
            built = build_event(
                job_id, job.last_seq + 1, "activity", observation.activity, observation.to_data()
            )
            if job.auth_token:
                built = sign(built, job.auth_token)
            signed = built
            self._after_commit(lambda: self.audit.record_published(signed))
            return self._record(conn, built, "cli")

    def has_worked(self, job_id: str) -> bool:
        """Whether the job's agent has worked (or asked something) since this attempt
        started: an agent idle at its prompt before its task arrived has not."""
        row = self.db.conn.execute(
            "SELECT 1 FROM job_activity WHERE job_id = ? AND activity IN ('working', 'waiting') "
            "AND id > COALESCE((SELECT MAX(id) FROM job_activity WHERE job_id = ? "
            "AND activity = 'starting'), 0) LIMIT 1",
            (job_id, job_id),
        ).fetchone()
        return row is not None

    def running_since_ms(self, job_ids: Iterable[str]) -> dict[str, int]:
        """When each job last moved to running (its current attempt), to the millisecond
        (``claimed_at`` has whole seconds); jobs never running are left out."""
        wanted = list(job_ids)
        since: dict[str, int] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self.db.conn.execute(
                "SELECT job_id, MAX(at_ms) FROM job_transitions WHERE to_status = 'running' "
                f"AND job_id IN ({','.join('?' * len(chunk))}) GROUP BY job_id",
                chunk,
            ).fetchall()
            since.update({str(job_id): int(at_ms) for job_id, at_ms in rows})
        return since

    def activity_history(self, job_id: str) -> builtins.list[activities.ActivityChange]:
        """The job's recorded activity changes, oldest first."""
        self.get(job_id)
        return activities.load_history(self.db.conn, job_id)

    def why(self, job_id: str) -> str:
        """Why the job is in its state, and for a running job what it is doing and why."""
        line = super().why(job_id)
        job = self.get(job_id)
        if job.status != "running" or not job.activity:
            return line
        history = activities.load_history(self.db.conn, job_id)
        if not history:
            return line
        return f"{line}; {activities.explain(history[-1])}"

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
        with self._write() as conn:
            if via != "cli":
                self._after_commit(lambda: self.audit.record_received(event, source=via))
            return self._record(conn, event, via, topic=topic)

    def record_events(
        self,
        raws: Iterable[bytes | str | Mapping[str, Any] | Event],
        *,
        via: Via = "cli",
        topics: Iterable[str | None] | None = None,
    ) -> builtins.list[Recorded | RegistryError]:
        """Record a batch in ONE transaction: one commit for many events (group commit).

        ``topics`` (one per event, when they came over MQTT) are where each arrived.
        Each event keeps ``record_event``'s semantics and gets its own verdict,
        in order: its ``Recorded``, or the RegistryError that refused it (the
        same one ``record_event`` would raise). Each runs in its own SAVEPOINT,
        so a refused event rolls back only itself, never the others. Anything
        else (the database locked, a disk error) raises and stores nothing:
        the caller retries the whole batch.
        """
        parsed: builtins.list[Event | RegistryError] = []
        for raw in raws:
            try:
                parsed.append(_parse(raw))
            except RegistryError as exc:
                parsed.append(exc)
        arrived = list(topics) if topics is not None else [None] * len(parsed)
        if len(arrived) != len(parsed):
            raise ValueError(f"{len(arrived)} topics for {len(parsed)} events")
        verdicts: builtins.list[Recorded | RegistryError] = []
        with self._write() as conn:
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
        queued = len(self._local.after)
        conn.execute("SAVEPOINT record_event")
        try:
            if via != "cli":
                self._after_commit(lambda: self.audit.record_received(event, source=via))
            recorded = self._record(conn, event, via, jobs, topic=topic)
        except RegistryError as exc:
            conn.execute("ROLLBACK TO record_event")
            conn.execute("RELEASE record_event")
            del self._local.after[queued:]
            jobs.pop(event.job_id, None)
            return exc
        conn.execute("RELEASE record_event")
        return recorded

    def _record(
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
        job = cached if cached is not None else self._require(conn, event.job_id)
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
        if job.status in FINAL_STATUSES:
            if not _came_before_the_end(job, event):
                log.info("ignoring %s via %s: job already %s", where, via, job.status)
                raise EventAfterTerminal(f"{where} arrived after the job was {job.status}; ignored")
            return self._record_late(conn, job, event, message_id, jobs)
        bus_seq = self._publish(
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
        if job.status == "pending":
            start_reason = reason if not event.is_terminal else f"{reason} without started"
            self._move(conn, job, "running", start_reason, transition="start")
            job = self._require(conn, job.job_id)
        elif not event.is_terminal:
            job = self._extend_due(conn, job)
        if job.status == "running" and not event.is_terminal:
            job = self._note_activity(conn, job, event)
        if event.is_terminal:
            target = "completed" if event.event == "completed" else "error"
            if event.event == "error" and event.detail:
                reason = f"{reason}: {event.detail[:200]}"
            result = {"event": event.event, "seq": event.seq, "detail": event.detail}
            self._move(conn, job, target, reason, result=result)
            job = self._require(conn, job.job_id)
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
        bus_seq = self._publish(
            conn, "job.event", job.job_id, event.to_dict(),
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
    if job.status not in ("completed", "error") or not isinstance(job.result, dict):
        return False
    terminal = job.result.get("seq")
    return isinstance(terminal, int) and event.seq < terminal


def _activity_shown(event: Event, agent: str) -> Observation | None:
    """What an event says about its agent's activity (None: nothing)."""
    if event.event == "activity":
        try:
            return Observation.from_data(event.data)
        except InvalidJobInput as exc:
            raise InvalidEvent(f"activity event: {exc}") from None
    source = f"publish:{agent}:{event.event}"
    if event.event in ("started", "progress"):
        return Observation("working", source)
    if event.event == "permission_required":
        return Observation("waiting", source, question=event.detail)
    return None


def _parse(raw: bytes | str | Mapping[str, Any] | Event) -> Event:
    """An Event from any transport's form of it (InvalidEvent if malformed)."""
    if isinstance(raw, Event):
        return raw
    if isinstance(raw, Mapping):
        return event_from_dict(dict(raw))
    return parse_event(raw)
