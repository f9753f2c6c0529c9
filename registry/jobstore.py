"""Job records and their moves: register, read, and state-machine transitions in one transaction.

Every write is one transaction on the bus's database: the job row, its
transition history, its task_claims row (the lease queue from ``bus.claims``,
queue = agent_session, task_id = job_id) and the bus messages describing the
change (``job.registered``, ``job.status``) commit together or not at all.
The audit log is written after the commit, best-effort. ``registry.jobs``
holds a ``JobStore`` (composition, not a subclass) and adds work distribution
(pick, leases); ``registry.recorder`` records events through it.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Self

from bus import claims
from bus.blobs import encode_payload
from bus.db import BUSY_TIMEOUT_MS, BusDB, now_ms
from bus.messages import Bus
from registry import activity, states
from registry.audit import AuditLog
from registry.errors import IllegalTransition, InvalidJobInput, JobNotFound
from registry.events import check_job_id
from registry.records import (
    DEFAULT_IDLE_TIMEOUT_SEC,
    DEFAULT_PREFIX,
    DEFAULT_TIMEOUT_SEC,
    Job,
    check_artifacts,
    check_broker,
    check_label,
    check_prompt,
    check_seconds,
    check_topic_prefix,
    iso_from_ms,
    job_from_row,
)
from registry.store import REGISTRY_AGENT, RecordKind, Records
from registry.vocabulary import FINAL_JOB_STATUSES, Activity, JobStatus, MessageType

__all__ = [
    "AGENT_MOVED",
    "DONE_WHEN",
    "FINAL_STATUSES",
    "JOBS",
    "REGISTRY_AGENT",
    "JobStore",
    "moved_by_agent",
]

FINAL_STATUSES: Final = FINAL_JOB_STATUSES
"""The name this module has long given ``vocabulary.FINAL_JOB_STATUSES``."""
DONE_WHEN = ("exit", "idle")
"""When an interactive agent's job is done: its process exits, or it finished its
turn and stayed idle past a grace period."""
# How the reason of a move made by an agent's own event starts ("agent published
# completed (seq 7)"); every other move (cancel, reconcile, by hand) says its own why.
AGENT_MOVED = "agent published"


def moved_by_agent(reason: str) -> bool:
    """Whether a status move with this reason was made by the agent's own event."""
    return reason.startswith(AGENT_MOVED)


JOBS: Final = RecordKind(
    table="jobs",
    key="job_id",
    history_table="job_transitions",
    from_column="from_status",
    to_column="to_status",
    decode=job_from_row,
    missing=lambda job_id: JobNotFound(f"no job {job_id!r}"),
)


class JobStore:
    """Jobs in ``bus``'s database. Safe to use from several processes at once
    (connections are per thread, every write is one IMMEDIATE transaction).

    Its lower-level methods (``write``, ``load``, ``require``, ``move``, ``announce``)
    are for the registry's own collaborators (``registry.jobs``,
    ``registry.recorder``), which compose a change of their own inside one write."""

    def __init__(self, bus: Bus, *, audit: AuditLog | None = None, audited: bool = True) -> None:
        """``audited=False`` skips the audit log (bulk loads, benchmarks): each
        audit line costs an fsync, far more than the SQLite commit it shadows."""
        self.records = Records(bus, JOBS, audited=audited)
        self.bus = bus
        self.db = bus.db
        self.audit = audit if audit is not None else AuditLog(bus.db.state_dir)
        self.audited = audited

    @classmethod
    def open(
        cls, state_dir: Path | str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, audited: bool = True
    ) -> Self:
        """The registry in ``state_dir/state.db`` (created and migrated if new)."""
        return cls(Bus(BusDB(state_dir, busy_timeout_ms=busy_timeout_ms)), audited=audited)

    # -- transactions with after-commit actions ----------------------------------
    def write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A write transaction whose audit actions run only after COMMIT (``Records.write``)."""
        return self.records.write()

    def after_commit(self, action: Callable[[], None]) -> None:
        """Queue an audit write for after COMMIT (dropped if the transaction fails)."""
        self.records.after_commit(action)

    # -- reading --------------------------------------------------------------
    def get(self, job_id: str) -> Job:
        """The job ``job_id``; JobNotFound if there is none."""
        return self.records.get(job_id)

    def list(self, *, status: str | None = None, agent_session: str | None = None) -> list[Job]:
        """Jobs oldest first, optionally only one status and/or one session."""
        if status is not None:
            states.JOB.require_state(status)
        sql, params = "SELECT * FROM jobs WHERE 1", []
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        if agent_session is not None:
            sql += " AND agent_session = ?"
            params.append(agent_session)
        rows = self.records.read(sql + " ORDER BY created_at_ms, rowid", params)
        return [job_from_row(row) for row in rows]

    def history(self, job_id: str) -> builtins.list[states.StateChange]:
        """The job's recorded transitions, oldest first."""
        return self.records.history(job_id)

    def status_reasons(self, job_ids: Iterable[str]) -> dict[str, str]:
        """Why each of these jobs has its status, for those whose last move was not
        made by an event of their agent (that event already says it)."""
        wanted = list(job_ids)
        reasons: dict[str, str] = {}
        for start in range(0, len(wanted), 500):  # under SQLite's bound-parameter limit
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for job_id, reason in self.records.read(
                "SELECT job_id, reason FROM job_transitions WHERE id IN ("
                f"SELECT MAX(id) FROM job_transitions WHERE job_id IN ({marks}) GROUP BY job_id)",
                tuple(chunk),
            ):
                if not moved_by_agent(str(reason or "")):
                    reasons[str(job_id)] = str(reason or "") or "no reason recorded"
        return reasons

    def why(self, job_id: str) -> str:
        """One line saying why the job is in its current state."""
        return states.explain(states.JOB, self.history(job_id))

    def load(self, conn: sqlite3.Connection, job_id: str) -> Job | None:
        """The job as ``conn`` (a write in progress) sees it, or None."""
        return self.records.load(conn, job_id)

    def require(self, conn: sqlite3.Connection, job_id: str) -> Job:
        """The job as ``conn`` sees it; JobNotFound if there is none."""
        return self.records.require(conn, job_id)

    # -- registering ------------------------------------------------------------
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
        """Register a pending job and enqueue it for its agent_session.

        ``done_when`` (exit or idle) says when an interactive agent's job counts
        as done; ``agent_session_id`` is the agent's own conversation id, which
        resuming the job continues. ``adopt`` = (job id, auth token): a fleet node
        takes a job the control room registered, under its id and token, so the
        events it forwards verify there (app/fleet/taking.py).
        """
        check_prompt(prompt)
        if done_when is not None and done_when not in DONE_WHEN:
            raise InvalidJobInput(f"done-when must be one of {', '.join(DONE_WHEN)}")
        if agent_session_id is not None:
            check_label("agent session id", agent_session_id)
        check_label("agent", agent)
        check_label("agent_session", agent_session)
        check_seconds("timeout", timeout_sec)
        check_seconds("idle timeout", idle_timeout_sec)
        artifacts = check_artifacts(expected_artifacts)
        block = check_broker(broker)
        if topic_prefix is not None:
            topic_prefix = check_topic_prefix(topic_prefix)
        token = secrets.token_urlsafe(32) if sign_events else None
        if adopt is not None:
            token = adopt[1] if sign_events else None
        with self.write() as conn:
            at_ms = now_ms()
            job_id = self._new_job_id(conn) if adopt is None else check_job_id(adopt[0])
            stamp = iso_from_ms(at_ms)
            conn.execute(
                "INSERT INTO jobs (job_id, status, created_at, updated_at, created_at_ms, prompt, "
                "agent, agent_session, broker, topic_prefix, timeout_sec, idle_timeout_sec, "
                "expected_artifacts, auth_token, done_when, agent_session_id) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    job_id,
                    states.JOB.initial,
                    stamp,
                    stamp,
                    at_ms,
                    prompt,
                    agent,
                    agent_session,
                    json.dumps(block) if block is not None else None,
                    topic_prefix or f"{DEFAULT_PREFIX}/{job_id}",
                    timeout_sec,
                    idle_timeout_sec,
                    json.dumps(artifacts, ensure_ascii=False),
                    token,
                    done_when,
                    agent_session_id,
                ),
            )
            self.records.record_move(
                conn, job_id, at_ms, None, JobStatus.PENDING, "registered", None
            )
            claims.enqueue(conn, job_id, queue=agent_session, at_ms=at_ms)
            self.announce(
                conn,
                MessageType.JOB_REGISTERED,
                job_id,
                {
                    "job_id": job_id,
                    "agent": agent,
                    "agent_session": agent_session,
                    "created_at": stamp,
                },
            )
            job = self.require(conn, job_id)
            record = job.to_dict(show_token=True)
            self.after_commit(lambda: self.audit.record_registered(record))
        return job

    def set_agent_session_id(self, job_id: str, session_id: str) -> Job:
        """Remember the agent's own conversation id (learned from its hook or transcript)."""
        check_label("agent session id", session_id)
        with self.write() as conn:
            self.require(conn, job_id)
            conn.execute(
                "UPDATE jobs SET agent_session_id = ? WHERE job_id = ?", (session_id, job_id)
            )
            return self.require(conn, job_id)

    def _new_job_id(self, conn: sqlite3.Connection) -> str:
        for _ in range(100):
            job_id = secrets.token_hex(4)
            if conn.execute("SELECT 1 FROM jobs WHERE job_id = ?", (job_id,)).fetchone() is None:
                return job_id
        raise InvalidJobInput("could not allocate a free job id (registry full?)")

    # -- status changes -----------------------------------------------------------
    def set_status(
        self, job_id: str, status: str, reason: str = "", *, transition: str | None = None
    ) -> Job:
        """Move a job to ``status`` by hand (`job status --set`), through the machine.

        Marking a pending job completed or error (seed 001's quick reference
        does) passes through running, so the history shows both legal steps.
        ``transition`` names the move in the history (`job status` records
        "by_hand", so a requeue by hand does not read as a lease expiry).
        """
        states.JOB.require_state(status)
        why = reason or f"set to {status} by hand"
        with self.write() as conn:
            job = self.require(conn, job_id)
            if job.status == JobStatus.PENDING and status in (JobStatus.COMPLETED, JobStatus.ERROR):
                self.move(conn, job, JobStatus.RUNNING, why, transition="start")
                job = self.require(conn, job_id)
            self.move(conn, job, status, why, transition=transition)
            return self.require(conn, job_id)

    def cancel(self, job_id: str, reason: str = "cancelled by user") -> Job:
        """pending|running -> cancelled; its queued task is settled."""
        with self.write() as conn:
            job = self.require(conn, job_id)
            states.next_state(states.JOB, job.status, "cancel", job_id)
            self.move(conn, job, JobStatus.CANCELLED, reason, transition="cancel")
            return self.require(conn, job_id)

    def resume(self, job_id: str, reason: str = "resumed by user") -> Job:
        """error|cancelled -> pending: a new attempt of the same job, queued again.

        Events of the earlier attempt (seq <= last_seq now) are refused from here on.
        """
        with self.write() as conn:
            job = self.require(conn, job_id)
            states.next_state(states.JOB, job.status, "resume", job_id)
            self.move(conn, job, JobStatus.PENDING, reason, transition="resume")
            return self.require(conn, job_id)

    def follow_up(self, job_id: str, reason: str = "a follow-up was sent") -> Job:
        """completed -> running: a person sent the agent, still at its prompt, more to do
        (a `--done-when idle` job keeps its pane for that). Supervised again from here:
        it waits, works and completes as its first turn did; same attempt, same seqs."""
        with self.write() as conn:
            job = self.require(conn, job_id)
            states.next_state(states.JOB, job.status, "follow_up", job_id)
            self.move(conn, job, JobStatus.RUNNING, reason, transition="follow_up")
            return self.require(conn, job_id)

    def requeue_interrupted(
        self, job_id: str, reason: str = "resumed after an interruption"
    ) -> Job:
        """running -> pending for a job whose agent was lost with its pane (a reboot,
        tmux killed): the control room starts it again as a new attempt."""
        with self.write() as conn:
            job = self.require(conn, job_id)
            states.next_state(states.JOB, job.status, "restart", job_id)
            if job.activity != Activity.INTERRUPTED:
                raise IllegalTransition(
                    f"job {job_id}: only an interrupted job restarts while running "
                    f"(it is {job.activity or JobStatus.RUNNING})"
                )
            self.move(conn, job, JobStatus.PENDING, reason, transition="restart")
            return self.require(conn, job_id)

    def move(
        self,
        conn: sqlite3.Connection,
        job: Job,
        target: str,
        reason: str,
        *,
        transition: str | None = None,
        result: Any = None,
    ) -> None:
        """Apply one legal transition: row, task, history, bus message, audit."""
        states.check_move(states.JOB, job.status, target, transition, job.job_id)
        at_ms = now_ms()
        stamp = iso_from_ms(at_ms)
        fields: dict[str, Any] = {"status": target, "updated_at": stamp}
        if target == JobStatus.RUNNING:
            lease_ms = at_ms + job.timeout_sec * 1000
            if transition != "pick":  # pick claimed through claim_next already
                claims.try_claim(
                    conn, job.job_id, job.agent_session, lease_ms=job.timeout_sec * 1000
                )
            fields |= {
                "claimed_at": stamp,
                "lease_until": iso_from_ms(lease_ms),
                "lease_until_ms": lease_ms,
            }
            if job.status == JobStatus.COMPLETED:  # a follow-up: it has not finished any more
                fields |= {"completed_at": None, "result": None}
        elif target == JobStatus.PENDING:
            claims.requeue(conn, job.job_id, at_ms=at_ms)
            fields |= {"claimed_at": None, "lease_until": None, "lease_until_ms": None}
            if job.status == JobStatus.RUNNING:
                fields["retry_count"] = job.retry_count + 1
            else:  # resume: a new attempt; late events of the old one are refused
                fields |= {"completed_at": None, "result": None, "seq_floor": job.last_seq}
        else:  # completed, error, cancelled: final
            text = encode_payload(result) if result is not None else None
            claims.settle(conn, job.job_id, result=text, at_ms=at_ms)
            fields |= {"completed_at": stamp, "lease_until": None, "lease_until_ms": None}
            if text is not None:
                fields["result"] = text
        assignments = ", ".join(f"{name} = ?" for name in fields)
        conn.execute(
            f"UPDATE jobs SET {assignments} WHERE job_id = ?", (*fields.values(), job.job_id)
        )
        if target == JobStatus.RUNNING:
            started = activity.Observation(Activity.STARTING, "control-room", question=reason)
            activity.store_change(conn, job.job_id, started, at_ms, None)
        else:
            activity.clear(conn, job.job_id)
        self.records.record_move(conn, job.job_id, at_ms, job.status, target, reason, transition)
        self.announce(
            conn,
            MessageType.JOB_STATUS,
            job.job_id,
            {"job_id": job.job_id, "from": job.status, "to": target, "reason": reason},
        )
        before = job.status
        self.after_commit(
            lambda: self.audit.record_status_changed(job.job_id, before, target, reason)
        )

    def extend_due(self, conn: sqlite3.Connection, job: Job) -> Job:
        """An event is a sign of life: push the job's lease to a full timeout away,
        but only once less than half of it remains (a burst of progress events
        then costs no writes), so the lease never runs nearer than half a
        timeout while events flow. Returns the job as it now is."""
        now = now_ms()
        timeout_ms = job.timeout_sec * 1000
        if job.lease_until_ms is not None and job.lease_until_ms - now >= timeout_ms // 2:
            return job
        lease_ms = now + timeout_ms
        if job.lease_until_ms is not None and job.lease_until_ms >= lease_ms:
            return job
        claims.extend(conn, job.job_id, lease_ms)
        stamp = iso_from_ms(lease_ms)
        conn.execute(
            "UPDATE jobs SET lease_until = ?, lease_until_ms = ? WHERE job_id = ?",
            (stamp, lease_ms, job.job_id),
        )
        return replace(job, lease_until=stamp, lease_until_ms=lease_ms)

    def announce(
        self,
        conn: sqlite3.Connection,
        kind: str,
        job_id: str,
        payload: dict[str, Any],
        *,
        message_id: str | None = None,
        from_agent: str = REGISTRY_AGENT,
    ) -> int:
        """Put a ``job.*`` message on the bus in the caller's transaction; its bus seq."""
        return self.records.announce(
            conn, kind, job_id, payload, message_id=message_id, from_agent=from_agent
        )
