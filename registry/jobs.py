"""The job registry a command, the TUI or a transport talks to.

It is made of parts it holds, not inherits: a ``JobStore`` (the job records and their
moves), an ``EventRecorder`` (the path every transport's events end in) and, here,
work distribution: pick, leases and claims, event seqs and the agent's activity.
Every public call keeps its old meaning; each is one transaction of the store.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Self

from bus import claims
from bus.db import BUSY_TIMEOUT_MS, BusDB, now_ms
from bus.errors import StaleClaim
from bus.messages import Bus
from registry import activity as activities
from registry import states
from registry.activity import Observation
from registry.audit import AuditLog
from registry.errors import NoPendingJob, RegistryError
from registry.events import Event, build_event
from registry.jobstore import JobStore
from registry.recorder import EventRecorder, Recorded, Via
from registry.records import (
    DEFAULT_IDLE_TIMEOUT_SEC,
    DEFAULT_TIMEOUT_SEC,
    Job,
    check_label,
    iso_from_ms,
)
from registry.signing import sign
from registry.vocabulary import FINAL_JOB_STATUSES, Activity, EventType, JobStatus

__all__ = ["Recorded", "Registry", "Via"]


class Registry:
    """The registry a command, the TUI or a transport talks to."""

    def __init__(self, bus: Bus, *, audit: AuditLog | None = None, audited: bool = True) -> None:
        """``audited=False`` skips the audit log (bulk loads, benchmarks)."""
        self.store = JobStore(bus, audit=audit, audited=audited)
        self.recorder = EventRecorder(self.store)
        self.bus = bus
        self.db = bus.db
        self.audit = self.store.audit
        self.audited = audited

    @classmethod
    def open(
        cls, state_dir: Path | str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, audited: bool = True
    ) -> Self:
        """The registry in ``state_dir/state.db`` (created and migrated if new)."""
        return cls(Bus(BusDB(state_dir, busy_timeout_ms=busy_timeout_ms)), audited=audited)

    # -- the job records (JobStore) ------------------------------------------------
    def get(self, job_id: str) -> Job:
        """The job ``job_id``; JobNotFound if there is none."""
        return self.store.get(job_id)

    def list(self, *, status: str | None = None, agent_session: str | None = None) -> list[Job]:
        """Jobs oldest first, optionally only one status and/or one session."""
        return self.store.list(status=status, agent_session=agent_session)

    def history(self, job_id: str) -> builtins.list[states.StateChange]:
        """The job's recorded transitions, oldest first."""
        return self.store.history(job_id)

    def status_reasons(self, job_ids: Iterable[str]) -> dict[str, str]:
        """Why each of these jobs has its status, where its agent's event does not say."""
        return self.store.status_reasons(job_ids)

    def register(
        self,
        prompt: str,
        agent: str,
        agent_session: str,
        *,
        timeout_sec: int = DEFAULT_TIMEOUT_SEC,
        idle_timeout_sec: int = DEFAULT_IDLE_TIMEOUT_SEC,
        expected_artifacts: Iterable[str] = (),
        broker: Mapping[str, Any] | None = None,
        sign_events: bool = True,
        topic_prefix: str | None = None,
        done_when: str | None = None,
        agent_session_id: str | None = None,
        adopt: tuple[str, str | None] | None = None,
    ) -> Job:
        """Register a pending job and enqueue it for its agent_session (``JobStore.register``)."""
        return self.store.register(
            prompt, agent, agent_session, timeout_sec=timeout_sec,
            idle_timeout_sec=idle_timeout_sec, expected_artifacts=expected_artifacts,
            broker=broker, sign_events=sign_events, topic_prefix=topic_prefix,
            done_when=done_when, agent_session_id=agent_session_id, adopt=adopt,
        )  # fmt: skip

    def set_agent_session_id(self, job_id: str, session_id: str) -> Job:
        """Remember the agent's own conversation id (learned from its hook or transcript)."""
        return self.store.set_agent_session_id(job_id, session_id)

    def set_status(
        self, job_id: str, status: str, reason: str = "", *, transition: str | None = None
    ) -> Job:
        """Move a job to ``status`` by hand (`job status --set`), through the machine."""
        return self.store.set_status(job_id, status, reason, transition=transition)

    def cancel(self, job_id: str, reason: str = "cancelled by user") -> Job:
        """pending|running -> cancelled; its queued task is settled."""
        return self.store.cancel(job_id, reason)

    def resume(self, job_id: str, reason: str = "resumed by user") -> Job:
        """error|cancelled -> pending: a new attempt of the same job, queued again."""
        return self.store.resume(job_id, reason)

    def follow_up(self, job_id: str, reason: str = "a follow-up was sent") -> Job:
        """completed -> running: a person sent the agent, still at its prompt, more to do."""
        return self.store.follow_up(job_id, reason)

    def requeue_interrupted(
        self, job_id: str, reason: str = "resumed after an interruption"
    ) -> Job:
        """running -> pending for a job whose agent was lost with its pane."""
        return self.store.requeue_interrupted(job_id, reason)

    # -- events (EventRecorder) ------------------------------------------------------
    def record_event(
        self,
        raw: bytes | str | Mapping[str, Any] | Event,
        *,
        via: Via = "cli",
        topic: str | None = None,
    ) -> Recorded:
        """Validate, verify, dedupe, append, move status (``EventRecorder.record_event``)."""
        return self.recorder.record_event(raw, via=via, topic=topic)

    def record_events(
        self,
        raws: Iterable[bytes | str | Mapping[str, Any] | Event],
        *,
        via: Via = "cli",
        topics: Iterable[str | None] | None = None,
    ) -> builtins.list[Recorded | RegistryError]:
        """A batch in one transaction, a verdict each (``EventRecorder.record_events``)."""
        return self.recorder.record_events(raws, via=via, topics=topics)

    # -- work distribution -------------------------------------------------------------
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
        with self.store.write() as conn:
            at_ms = now_ms()  # one moment for the sweep and the claim
            self._expire(conn, agent_session, at_ms)
            for _ in range(1000):
                claim = claims.claim_next(conn, agent_session, who, at_ms=at_ms)
                if claim is None:
                    break
                job = self.store.load(conn, claim.task_id)
                if job is not None and job.status == JobStatus.RUNNING:
                    # Its task was given back under it (a bus-level release): re-queue
                    # the job, then claim again. Settling it would strand the job in
                    # running with no task to expire.
                    reason = "its task was given back"
                    self.store.move(conn, job, JobStatus.PENDING, reason, transition="release")
                    continue
                if job is None or job.status != JobStatus.PENDING:
                    # A task whose job is gone or already moved on: settle it, look again.
                    claims.settle(conn, claim.task_id)
                    continue
                claim = claims.renew(conn, claim, lease_ms=job.timeout_sec * 1000)
                self.store.move(conn, job, JobStatus.RUNNING, f"picked by {who}", transition="pick")
                return self.store.require(conn, job.job_id), claim
        raise NoPendingJob(f"no pending job for agent session {agent_session!r}")

    def expire_leases(self, agent_session: str | None = None) -> builtins.list[str]:
        """Move running jobs whose lease ran out back to pending (retry_count + 1)."""
        with self.store.write() as conn:
            return self._expire(conn, agent_session)

    def release_claim(self, claim: claims.Claim) -> None:
        """A queue worker gives its job back unfinished (shutting down): the job goes
        back to pending at once, as when its lease runs out. StaleClaim if the claim
        is no longer current."""
        with self.store.write() as conn:
            job = self.store.require(conn, claim.task_id)
            claims.release(conn, claim)
            if job.status == JobStatus.RUNNING:
                reason = f"given back by {claim.agent}"
                self.store.move(conn, job, JobStatus.PENDING, reason, transition="release")

    def heartbeat(self, claim: claims.Claim, lease_sec: int | None = None) -> claims.Claim:
        """Renew a worker's claim on a job and the job's lease (seed 004 heartbeat).

        StaleClaim if the claim was lost (its lease expired and it was swept or re-picked).
        """
        with self.store.write() as conn:
            job = self.store.require(conn, claim.task_id)
            lease_ms = (lease_sec or job.timeout_sec) * 1000
            renewed = claims.renew(conn, claim, lease_ms=lease_ms)
            conn.execute(
                "UPDATE jobs SET lease_until = ?, lease_until_ms = ? WHERE job_id = ?",
                (iso_from_ms(renewed.lease_until_ms), renewed.lease_until_ms, job.job_id),
            )
            return renewed

    def complete_claim(
        self, claim: claims.Claim, result: Any = None, *, status: str = JobStatus.COMPLETED
    ) -> bool:
        """A queue worker finished its job: fenced by the claim's attempt.

        False when this same claim already completed it (an idempotent retry);
        StaleClaim when the claim is no longer current, or someone else ended the
        job otherwise while the worker held it (cancelled, failed by the control
        room, set by hand): its result is not recorded.
        """
        with self.store.write() as conn:
            job = self.store.require(conn, claim.task_id)
            # Ending a job settles its task under the claim, which would then read
            # as this worker's own earlier completion.
            if job.status in FINAL_JOB_STATUSES and job.status != status:
                raise StaleClaim(
                    f"job {job.job_id} is {job.status}, not {status}, since "
                    f"{claim.agent} took it: its result is not recorded"
                )
            if not claims.complete(conn, claim, result):
                return False
            reason = f"{status} by {claim.agent} (attempt {claim.attempt})"
            self.store.move(conn, job, status, reason, result=result)
            return True

    def _expire(
        self, conn: sqlite3.Connection, agent_session: str | None, at_ms: int | None = None
    ) -> builtins.list[str]:
        moved = []
        for task in claims.expired(conn, queue=agent_session, at_ms=at_ms):
            job = self.store.load(conn, task.task_id)
            if job is None or job.status != JobStatus.RUNNING:
                continue
            self.store.move(
                conn, job, JobStatus.PENDING, "lease expired", transition="lease_expired"
            )
            moved.append(job.job_id)
        return moved

    def next_seq(self, job_id: str) -> int:
        """Allocate the job's next event seq (persisted, so it survives restarts)."""
        with self.store.write() as conn:
            job = self.store.require(conn, job_id)
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
        with self.store.write() as conn:
            job = self.store.require(conn, job_id)
            built = build_event(job_id, job.last_seq + 1, event, detail, dict(data or {}))
            key = token or job.auth_token
            if key:
                built = sign(built, key)
            signed = built
            self.store.after_commit(lambda: self.store.audit.record_published(signed))
            return self.recorder.record(conn, built, "cli")

    def observe(self, job_id: str, observation: Observation) -> Recorded | None:
        """Record what the job's agent is doing, as a signed ``activity`` event.

        A repeated signal for the state the job is already in is no change:
        None, and no seq is used. So is any sighting once the job is not
        running (a hook firing after a cancel). The event is signed with the
        job's own token, as `publish` signs, so every transport treats it alike.
        """
        with self.store.write() as conn:
            job = self.store.require(conn, job_id)
            current = activities.observation_of(
                job.activity, job.activity_source, job.activity_data
            )
            observation = observation.after(current)
            if (
                job.status != JobStatus.RUNNING
                or observation.same_as(job.activity, job.activity_data)
                or observation.defers_to(current)
            ):
                return None
            built = build_event(
                job_id,
                job.last_seq + 1,
                EventType.ACTIVITY,
                observation.activity,
                observation.to_data(),
            )
            if job.auth_token:
                built = sign(built, job.auth_token)
            signed = built
            self.store.after_commit(lambda: self.store.audit.record_published(signed))
            return self.recorder.record(conn, built, "cli")

    def has_worked(self, job_id: str) -> bool:
        """Whether the job's agent has worked (or asked something) since this attempt
        started: an agent idle at its prompt before its task arrived has not."""
        row = self.db.conn.execute(
            "SELECT 1 FROM job_activity WHERE job_id = ? AND activity IN (?, ?) "
            "AND id > COALESCE((SELECT MAX(id) FROM job_activity WHERE job_id = ? "
            "AND activity = ?), 0) LIMIT 1",
            (job_id, Activity.WORKING, Activity.WAITING, job_id, Activity.STARTING),
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
                "SELECT job_id, MAX(at_ms) FROM job_transitions WHERE to_status = ? "
                f"AND job_id IN ({','.join('?' * len(chunk))}) GROUP BY job_id",
                (JobStatus.RUNNING, *chunk),
            ).fetchall()
            since.update({str(job_id): int(at_ms) for job_id, at_ms in rows})
        return since

    def activity_history(self, job_id: str) -> builtins.list[activities.ActivityChange]:
        """The job's recorded activity changes, oldest first."""
        self.get(job_id)
        return activities.load_history(self.db.conn, job_id)

    def why(self, job_id: str) -> str:
        """Why the job is in its state, and for a running job what it is doing and why."""
        line = self.store.why(job_id)
        job = self.get(job_id)
        if job.status != JobStatus.RUNNING or not job.activity:
            return line
        history = activities.load_history(self.db.conn, job_id)
        if not history:
            return line
        return f"{line}; {activities.explain(history[-1])}"
