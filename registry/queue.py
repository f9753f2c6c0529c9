"""The task queue client (seed 004): next_task, complete_task, heartbeat, and nudges.

The queue (``task_claims`` via ``bus.claims``) is the source of truth; a nudge
is only a bus message saying "look now", so a lost nudge costs latency, never
work. Delivery is at-least-once and ``task_id`` is the idempotency key: a
claim not completed within its lease becomes claimable again, and the holder
of an outdated claim cannot complete the task (StaleClaim).

Over a ``Registry`` the tasks are jobs (queue = agent_session) and claiming
one moves it to running; over a bare ``Bus`` they are plain payloads.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Final

from bus import claims
from bus.errors import StaleClaim
from bus.messages import Bus, Outgoing
from registry import store
from registry.errors import NoPendingJob
from registry.jobs import Registry
from registry.records import Job
from registry.vocabulary import MessageType

NUDGE: Final = MessageType.QUEUE_NUDGE
DEFAULT_LEASE_MS: Final = claims.DEFAULT_LEASE_MS
_WAKE_TYPES: Final = frozenset({NUDGE, MessageType.JOB_REGISTERED})


@dataclass(frozen=True)
class Task:
    """A claimed task: its id, payload (a job record over a Registry), and lease."""

    task_id: str
    payload: Any
    attempt: int
    lease_until_ms: int
    job: Job | None = None


def nudge(bus: Bus, queue: str, task_id: str | None = None, *, sender: str = "registry") -> int:
    """Tell ``queue``'s workers to look now; returns the nudge's bus seq."""
    payload = {"queue": queue, "task_id": task_id}
    return bus.publish(Outgoing(type=NUDGE, from_agent=sender, to_agent=queue, payload=payload)).seq


def enqueue_task(
    bus: Bus, task_id: str, payload: Any = None, *, queue: str = "default", notify: bool = True
) -> bool:
    """Enqueue a plain task (idempotent on task_id: False if it existed), then nudge."""
    added = claims.enqueue(bus.db.conn, task_id, queue=queue, payload=payload)
    if added and notify:
        nudge(bus, queue, task_id)
    return added


def requeue_expired(bus: Bus, queue: str | None = None) -> list[str]:
    """The sweeper for plain tasks: claims whose lease ran out become pending again.

    (claim_next would take them anyway; sweeping makes the state visible and
    lets a later complete by the old holder fail as stale.) Jobs are swept by
    ``Registry.expire_leases`` instead, which also moves their status.
    """
    conn = bus.db.conn
    moved: list[str] = []
    with bus.db.transaction():
        for task in claims.expired(conn, queue=queue):
            if conn.execute("SELECT 1 FROM jobs WHERE job_id = ?", (task.task_id,)).fetchone():
                continue  # a job: its status must move too (Registry.expire_leases)
            claims.requeue(conn, task.task_id)
            moved.append(task.task_id)
    return moved


class QueueClient:
    """A worker's handle on one queue (default: the queue named after ``agent``)."""

    def __init__(
        self,
        source: Registry | Bus,
        agent: str,
        *,
        queue: str | None = None,
        lease_ms: int | None = None,
    ) -> None:
        """``lease_ms``: how long a claim lasts without a heartbeat (default: the
        job's timeout over a Registry, DEFAULT_LEASE_MS over a Bus)."""
        self.registry = source if isinstance(source, Registry) else None
        self.bus = source.bus if isinstance(source, Registry) else source
        if self.registry is None:
            store.ensure_schema(self.bus.db.conn, self.bus.db.path)  # requeue_expired reads jobs
        self.agent = agent
        self.queue = queue or agent
        self.lease_ms = lease_ms
        self._claims: dict[str, claims.Claim] = {}
        self._seen_seq = self.bus.latest_seq()

    def next_task(self) -> Task | None:
        """Claim the oldest available task (pending, or whose lease expired), or None."""
        if self.registry is not None:
            try:
                job, claim = self.registry.pick_claim(self.queue, claimer=self.agent)
            except NoPendingJob:
                return None
            self._claims[claim.task_id] = claim
            return Task(claim.task_id, job.to_dict(), claim.attempt, claim.lease_until_ms, job)
        requeue_expired(self.bus, self.queue)
        claim_or_none = claims.claim_next(
            self.bus.db.conn, self.queue, self.agent, lease_ms=self._bus_lease_ms
        )
        if claim_or_none is None:
            return None
        claim = claim_or_none
        self._claims[claim.task_id] = claim
        payload = json.loads(claim.payload) if claim.payload is not None else None
        return Task(claim.task_id, payload, claim.attempt, claim.lease_until_ms)

    def heartbeat(self, task_id: str) -> Task:
        """Renew the lease on a task this client holds; StaleClaim if it was lost."""
        claim = self._held(task_id)
        if self.registry is not None:
            lease_sec = None if self.lease_ms is None else max(1, self.lease_ms // 1000)
            renewed = self.registry.heartbeat(claim, lease_sec)
        else:
            renewed = claims.renew(self.bus.db.conn, claim, lease_ms=self._bus_lease_ms)
        self._claims[task_id] = renewed
        payload = json.loads(renewed.payload) if renewed.payload is not None else None
        return Task(task_id, payload, renewed.attempt, renewed.lease_until_ms)

    def complete_task(self, task_id: str, result: Any = None) -> bool:
        """Record ``result`` for a task: True the first time, False on a retry of a
        completion that already landed. StaleClaim if another claim owns it now."""
        claim = self._claims.get(task_id)
        if claim is None:
            return self._already_done(task_id)
        if self.registry is not None:
            return self.registry.complete_claim(claim, result)
        return claims.complete(self.bus.db.conn, claim, result)

    def release_task(self, task_id: str) -> None:
        """Give a task back unfinished (shutting down): claimable again at once."""
        claim = self._held(task_id)
        if self.registry is not None:
            self.registry.release_claim(claim)
        else:
            claims.release(self.bus.db.conn, claim)
        del self._claims[task_id]

    def wait_for_nudge(self, timeout: float) -> bool:
        """Block until a nudge (or a job registered) for this queue arrives, or
        ``timeout`` seconds pass; True if woken. Poll with next_task() either way."""
        deadline = time.monotonic() + timeout
        for message in self.bus.follow(
            after_seq=self._seen_seq, stop=lambda: time.monotonic() >= deadline
        ):
            self._seen_seq = message.seq
            payload = message.payload if isinstance(message.payload, dict) else {}
            target = payload.get("queue") or payload.get("agent_session")
            if message.type in _WAKE_TYPES and target == self.queue:
                return True
        return False

    @property
    def _bus_lease_ms(self) -> int:
        return DEFAULT_LEASE_MS if self.lease_ms is None else self.lease_ms

    def _held(self, task_id: str) -> claims.Claim:
        claim = self._claims.get(task_id)
        if claim is None:
            raise StaleClaim(f"task {task_id}: not claimed by {self.agent} in this client")
        return claim

    def _already_done(self, task_id: str) -> bool:
        """Completing a task this client never claimed: a no-op if it is done,
        refused otherwise (only a claim holder may complete)."""
        state = claims.get(self.bus.db.conn, task_id)  # TaskNotFound if never enqueued
        if state.state == "done":
            return False
        raise StaleClaim(f"task {task_id}: not claimed by {self.agent} (state {state.state})")
