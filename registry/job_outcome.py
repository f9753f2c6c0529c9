"""How a waited-on job ended: the terminal-event state machine of seed 000's
job_subscriber, shared by `orchestrate subscribe` (MQTT) and `submit` (any transport).

Named for what it decides (each job's :class:`Outcome`), unlike its neighbours:
``app/control/submit_wait.py`` drives a wait from the CLI, and
``registry/waiting_count.py`` counts jobs waiting for a person.

The waiter is fed events from whatever carries them and decides; it does no I/O.
It acts on each job's first terminal event once and ignores anything after it
(QoS 1 does not order retries, so late progress can follow a completed), drops
duplicates by (job_id, seq), and tracks a wall-clock and an idle deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from bus.messages import Bus
from registry.bus_types import JOB_EVENT
from registry.errors import RegistryError
from registry.event_trust import WatchedJob, verify_bus_message, watched_on_bus
from registry.events import Event
from registry.jobs import Registry
from registry.jobstore import JobStore
from registry.vocabulary import FINAL_JOB_STATUSES, EventType

log = logging.getLogger(__name__)

Verdict = Literal["new", "terminal", "duplicate", "late", "unexpected"]
OutcomeStatus = Literal["completed", "error", "cancelled", "timeout"]
EXIT_CODES: dict[OutcomeStatus, int] = {"completed": 0, "error": 1, "cancelled": 1, "timeout": 2}
# How long a job the registry records as ended may wait for its terminal event to
# arrive (over MQTT it can trail the status) before the status alone decides.
STATUS_GRACE_SEC = 2.0
STATUS_CHECK_INTERVAL_SEC = 1.0


@dataclass(frozen=True)
class Outcome:
    """How one job ended, as far as the waiter saw."""

    job_id: str
    status: OutcomeStatus
    event: Event | None
    reason: str

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]


class JobWaiter:
    """Decides when waiting on ``job_ids`` is over, one event at a time."""

    def __init__(
        self,
        job_ids: Iterable[str],
        *,
        timeout_sec: float,
        idle_timeout_sec: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.job_ids = frozenset(job_ids)
        if not self.job_ids:
            raise ValueError("nothing to wait for")
        self.clock = clock
        self.timeout_sec = timeout_sec
        self.idle_timeout_sec = idle_timeout_sec
        self.started_at = clock()
        self.last_activity = self.started_at
        self.outcomes: dict[str, Outcome] = {}
        self._seen: set[tuple[str, int]] = set()

    def offer(self, event: Event) -> Verdict:
        """Take one event; the verdict says whether it was news."""
        key = (event.job_id, event.seq)
        if event.job_id not in self.job_ids:
            log.warning("dropped event for unexpected job %s (seq %d)", event.job_id, event.seq)
            return "unexpected"
        if key in self._seen:
            return "duplicate"
        self._seen.add(key)
        if event.job_id in self.outcomes:
            log.info(
                "ignored %s seq %d for job %s: it already ended",
                event.event,
                event.seq,
                event.job_id,
            )
            return "late"
        self.last_activity = self.clock()
        if event.is_terminal:
            status: OutcomeStatus = "completed" if event.event == EventType.COMPLETED else "error"
            self.outcomes[event.job_id] = Outcome(event.job_id, status, event, event.detail)
            return "terminal"
        return "new"

    @property
    def done(self) -> bool:
        """Every job has an outcome (terminal or timed out)."""
        return len(self.outcomes) == len(self.job_ids)

    def check_deadlines(self) -> bool:
        """Time out the jobs still open if a deadline passed; True when waiting is over."""
        if self.done:
            return True
        now = self.clock()
        if now - self.started_at >= self.timeout_sec:
            reason = f"no terminal event within {self.timeout_sec:g} s"
        elif now - self.last_activity >= self.idle_timeout_sec:
            reason = f"no event for {self.idle_timeout_sec:g} s (idle timeout)"
        else:
            return False
        for job_id in self.job_ids - self.outcomes.keys():
            self.outcomes[job_id] = Outcome(job_id, "timeout", None, reason)
        return True

    @property
    def exit_code(self) -> int:
        """0 all completed, 1 any error or cancel, 2 any timeout (the worst wins)."""
        return max((o.exit_code for o in self.outcomes.values()), default=2)


class RegistryWatchingWaiter(JobWaiter):
    """A JobWaiter that also asks the registry how its local jobs stand, because
    not every end is an event: a cancel, a status set by hand, or the control room
    failing a job whose pane died move the job with no terminal event to wait for.

    A job recorded as ended gets ``grace_sec`` for its terminal event to arrive;
    after that its status (and the registry's reason) is the outcome.
    """

    def __init__(
        self,
        registry: Registry | JobStore,
        job_ids: Iterable[str],
        *,
        local_ids: Iterable[str],
        timeout_sec: float,
        idle_timeout_sec: float,
        grace_sec: float = STATUS_GRACE_SEC,
        check_interval: float = STATUS_CHECK_INTERVAL_SEC,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            job_ids, timeout_sec=timeout_sec, idle_timeout_sec=idle_timeout_sec, clock=clock
        )
        self.registry = registry
        self.local_ids = frozenset(local_ids) & self.job_ids
        self.grace_sec = grace_sec
        self.check_interval = check_interval
        self._next_check = self.started_at
        self._ended_since: dict[str, float] = {}

    def check_deadlines(self) -> bool:
        """Deadlines first, then (throttled) the registry's record of each open job."""
        if super().check_deadlines():
            return True
        now = self.clock()
        if now < self._next_check:
            return False
        self._next_check = now + self.check_interval
        self.check_registry(now)
        return self.done

    def check_registry(self, now: float) -> None:
        """Give each open local job the registry records as ended its outcome, once
        its grace for a terminal event has passed."""
        for job_id in sorted(self.local_ids - self.outcomes.keys()):
            job = self.registry.get(job_id)
            if job.status not in FINAL_JOB_STATUSES:
                self._ended_since.pop(job_id, None)
                continue
            if now - self._ended_since.setdefault(job_id, now) < self.grace_sec:
                continue
            status = cast(OutcomeStatus, job.status)
            self.outcomes[job_id] = Outcome(job_id, status, None, self.registry.why(job_id))


def bus_events(
    bus: Bus,
    jobs: Mapping[str, WatchedJob],
    *,
    after_seq: int = 0,
    stop: Callable[[], bool],
) -> Iterator[Event]:
    """The believable events of ``jobs`` on the SQLite bus after ``after_seq``, until
    ``stop()``.

    Checked as MQTT events are (``registry.event_trust``): the bus is shared, and a
    `job.event` there is the registry's only while nothing else writes one. Anything
    that fails a check is skipped with a logged reason.
    """
    task = next(iter(jobs)) if len(jobs) == 1 else None
    for message in bus.follow(after_seq=after_seq, task=task, stop=stop):
        if message.type != JOB_EVENT or message.correlation_id not in jobs:
            continue
        try:
            yield verify_bus_message(message, jobs)
        except RegistryError as exc:
            log.warning("dropped job event at bus seq %d: %s", message.seq, exc)


def wait_on_bus(
    bus: Bus,
    waiter: JobWaiter,
    *,
    after_seq: int = 0,
    on_event: Callable[[Event, Verdict], None] | None = None,
) -> JobWaiter:
    """Feed ``waiter`` from the bus until every job ended or a deadline passed; each
    job's events are verified against its record in the registry on ``bus``."""
    jobs = watched_on_bus(JobStore(bus, audited=False), waiter.job_ids)
    for event in bus_events(bus, jobs, after_seq=after_seq, stop=waiter.check_deadlines):
        verdict = waiter.offer(event)
        if on_event is not None:
            on_event(event, verdict)
        if waiter.done:
            break
    waiter.check_deadlines()
    return waiter
