"""`submit`'s wait: the seed subscriber's exit codes, plus a look at the agent's pane.

Events alone cannot tell a slow agent from a dead one: an agent whose command
was not found never publishes anything. So while waiting, the job's pane is
checked about once a second; a dead pane under a running job fails the job
(with the pane's exit status as the reason) and ends the wait with exit 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.orchestration.orchestrator import Orchestrator
from registry.events import Event
from registry.waiter import JobWaiter, Outcome, Verdict, wait_on_bus

PANE_CHECK_INTERVAL_SEC = 1.0


class PaneWatchingWaiter(JobWaiter):
    """A JobWaiter for one submitted job that also ends when its pane dies or the job is
    moved to a final status by someone else (cancel, reconcile in another process)."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        job_id: str,
        *,
        timeout_sec: float,
        idle_timeout_sec: float,
        check_interval: float = PANE_CHECK_INTERVAL_SEC,
    ) -> None:
        super().__init__([job_id], timeout_sec=timeout_sec, idle_timeout_sec=idle_timeout_sec)
        self.orchestrator = orchestrator
        self.job_id = job_id
        self.check_interval = check_interval
        self._next_check = time.monotonic() + check_interval

    def check_deadlines(self) -> bool:
        """The bus follower's stop callback: deadlines first, then (throttled) the pane."""
        if super().check_deadlines():
            return True
        now = time.monotonic()
        if now < self._next_check:
            return False
        self._next_check = now + self.check_interval
        reason = self.orchestrator.check_job_pane(self.job_id)
        job = self.orchestrator.registry.get(self.job_id)
        if reason is None and job.status in ("running", "pending"):
            return False
        if job.status == "completed":
            return False  # the completed event is on the bus: let the follower deliver it
        why = reason or self.orchestrator.registry.why(self.job_id)
        self.outcomes[self.job_id] = Outcome(self.job_id, "error", None, why)
        return True


def wait_for_job(
    orchestrator: Orchestrator,
    job_id: str,
    *,
    after_seq: int,
    timeout_sec: float,
    idle_timeout_sec: float,
    on_event: Callable[[Event, Verdict], None] | None = None,
) -> Outcome:
    """Wait for the job's terminal event (or its pane's death, or a deadline)."""
    waiter = PaneWatchingWaiter(
        orchestrator, job_id, timeout_sec=timeout_sec, idle_timeout_sec=idle_timeout_sec
    )
    wait_on_bus(orchestrator.registry.bus, waiter, after_seq=after_seq, on_event=on_event)
    return waiter.outcomes[job_id]
