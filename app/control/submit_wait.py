"""`submit`'s wait for its job: the seed subscriber's exit codes, plus a look at the
agent's pane (``registry/waiter.py`` is the bus-only waiter this extends).

Events alone cannot tell a slow agent from a dead one: an agent whose command
was not found never publishes anything. So while waiting, the job's pane is
checked about once a second; a dead pane under a running job fails the job
(with the pane's exit status as the reason) and ends the wait with exit 1. A job
ended with no event (cancelled, set by hand) ends it as for `subscribe`.
"""

from __future__ import annotations

from collections.abc import Callable

from app.control.orchestrator import Orchestrator
from registry.events import Event
from registry.waiter import Outcome, RegistryWatchingWaiter, Verdict, wait_on_bus

PANE_CHECK_INTERVAL_SEC = 1.0


class PaneWatchingWaiter(RegistryWatchingWaiter):
    """A RegistryWatchingWaiter for one submitted job that also ends when its pane dies:
    a dead pane under a running job fails the job at once, with the pane's reason."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        job_id: str,
        *,
        timeout_sec: float,
        idle_timeout_sec: float,
        check_interval: float = PANE_CHECK_INTERVAL_SEC,
    ) -> None:
        super().__init__(
            orchestrator.registry,
            [job_id],
            local_ids=[job_id],
            timeout_sec=timeout_sec,
            idle_timeout_sec=idle_timeout_sec,
            check_interval=check_interval,
        )
        self.orchestrator = orchestrator
        self.job_id = job_id

    def check_registry(self, now: float) -> None:
        """The pane first (its death is the reason), then the registry's record."""
        reason = self.orchestrator.check_job_pane(self.job_id)
        if reason is not None:
            # "error" is registry/waiter.py's OutcomeStatus, a Literal mypy checks
            self.outcomes[self.job_id] = Outcome(self.job_id, "error", None, reason)
            return
        super().check_registry(now)


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
