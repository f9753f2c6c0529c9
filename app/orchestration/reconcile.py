"""One liveness pass: sample agent panes, beat for them, fail dead ones, flag idle ones.

Liveness does not trust self-reports: a pane is judged from the outside (alive?
output moved? a y/n prompt on screen?), and the heartbeat is written on the
agent's behalf. The pane log's mtime is the output clock that survives between
processes (tmux pipe-pane appends every byte the agent prints), so a one-shot
`orchestrate reconcile` judges idleness as well as the TUI's long-lived watcher.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from app.tmux.driver import TmuxDriver
from app.tmux.liveness import LivenessSampler, PaneLiveness, PaneState
from app.tmux.models import PaneStatus
from bus import heartbeats
from bus.messages import Outgoing
from registry.records import Job
from registry.wording import counted

if TYPE_CHECKING:
    from app.orchestration.orchestrator import Orchestrator

log = logging.getLogger(__name__)

WATCHER_AGENT = "orchestrate"
# Unchanged output for this long (or the job's idle timeout, if shorter) is "idle".
IDLE_AFTER_SEC = 30.0


def pane_gone_reason(status: PaneStatus | None) -> str:
    """Why a job's agent pane is no longer running, as recorded on the job."""
    if status is None or not status.exists:
        return "agent pane is gone (killed, or its tmux session was closed)"
    if status.dead_status is not None:
        return f"agent pane exited with status {status.dead_status}"
    if status.dead_signal is not None:
        return f"agent pane was killed by signal {status.dead_signal}"
    return "agent pane exited"


START_GRACE_SEC = 10.0  # a running job's pane may take this long to appear and be tagged


@dataclass
class ReconcileReport:
    """What one pass saw and did; `summary()` is the line `orchestrate reconcile` prints."""

    sampled: dict[str, str] = field(default_factory=dict)  # job id -> working/idle/blocked/dead
    errored: dict[str, str] = field(default_factory=dict)  # job id -> reason
    flagged: dict[str, str] = field(default_factory=dict)  # job id -> reason (new flags only)
    terminated_sessions: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)  # jobs whose lease ran out -> pending

    @property
    def acted(self) -> bool:
        """True when the pass changed something (not just sampled)."""
        return bool(self.errored or self.flagged or self.terminated_sessions or self.expired)

    def summary(self) -> str:
        """One line: panes by state, then every change made."""
        counts: dict[str, int] = {}
        for state in self.sampled.values():
            counts[state] = counts.get(state, 0) + 1
        by_state = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        parts = [counted(len(self.sampled), "agent pane") + (f" ({by_state})" if by_state else "")]
        parts += [f"job {job} → error: {why}" for job, why in self.errored.items()]
        parts += [f"job {job} flagged: {why}" for job, why in self.flagged.items()]
        parts += [f"session {label} → terminated" for label in self.terminated_sessions]
        parts += [f"job {job} lease expired → pending" for job in self.expired]
        return "; ".join(parts)


class Reconciler:
    """Holds the pane sampler between passes; `run()` is one pass (thread-safe)."""

    def __init__(self, orchestrator: Orchestrator, driver: TmuxDriver) -> None:
        self.orchestrator = orchestrator
        self.sampler = LivenessSampler(driver, idle_after=IDLE_AFTER_SEC)
        self._lock = threading.Lock()
        self._seen_panes: set[str] = set()
        self._jobs_with_pane: set[str] = set()  # jobs whose pane this reconciler has seen

    def run(self) -> ReconcileReport:
        """Expire leases, judge every running job's pane, reconcile sessions with tmux."""
        with self._lock:
            orch = self.orchestrator
            report = ReconcileReport(expired=orch.registry.expire_leases())
            ours = [
                job
                for job in orch.registry.list(status="running")
                if orch.pane_log(job.job_id).exists()  # started in a pane by orchestrate
            ]
            panes = orch.panes_by_job() if ours else {}
            self._jobs_with_pane.update(j.job_id for j in ours if j.job_id in panes)
            samples = self.sampler.sample(panes[j.job_id] for j in ours if j.job_id in panes)
            for job in ours:
                pane_id = panes.get(job.job_id)
                self._judge(job, samples.get(pane_id) if pane_id else None, report)
            self._seen_panes = set(samples)
            report.terminated_sessions = orch.reconcile_sessions()
            return report

    def _judge(self, job: Job, sample: PaneLiveness | None, report: ReconcileReport) -> None:
        orch = self.orchestrator
        now = time.time()
        starting = now - _epoch(job.claimed_at) < START_GRACE_SEC
        if sample is None and starting and job.job_id not in self._jobs_with_pane:
            # Never seen, just claimed: its pane may be starting right now, in this
            # process or another (`orchestrate submit` beside a running TUI).
            report.sampled[job.job_id] = "starting"
            return
        if sample is None or sample.state is PaneState.DEAD:
            status = orch.driver.pane_status(sample.pane_id) if sample else None
            reason = orch.fail_if_running(job.job_id, pane_gone_reason(status))
            if reason is not None:
                report.errored[job.job_id] = reason
            self._beat(job, PaneState.DEAD)
            report.sampled[job.job_id] = PaneState.DEAD.value
            return
        output_at = _mtime(orch.pane_log(job.job_id))
        if sample.pane_id in self._seen_panes:  # a first sample always counts as a change
            output_at = max(output_at, sample.last_change_at)
        state = sample.state
        if state is not PaneState.BLOCKED:
            idle_after = min(IDLE_AFTER_SEC, float(job.idle_timeout_sec))
            state = PaneState.WORKING if now - output_at < idle_after else PaneState.IDLE
        self._beat(job, state)
        report.sampled[job.job_id] = state.value
        quiet_since = max(output_at, _epoch(job.last_event_at), _epoch(job.claimed_at))
        quiet_for = now - quiet_since
        if quiet_for > job.idle_timeout_sec:
            doing = "waiting for permission" if state is PaneState.BLOCKED else "no pane output"
            reason = (
                f"{doing} and no events for {quiet_for:.0f} s "
                f"(idle timeout {job.idle_timeout_sec} s)"
            )
            if self._flag(job, reason, int(quiet_since * 1000)):
                report.flagged[job.job_id] = reason

    def _beat(self, job: Job, state: PaneState) -> None:
        """The heartbeat the agent would write, written for it from what its pane shows."""
        conn = self.orchestrator.registry.db.conn
        heartbeats.write(conn, job.job_id, state.value, current_task=job.job_id)

    def _flag(self, job: Job, reason: str, quiet_since_ms: int) -> bool:
        """Publish one `job.flag` per quiet spell (its id is fixed, so repeats are dropped)."""
        message = Outgoing(
            type="job.flag",
            from_agent=WATCHER_AGENT,
            correlation_id=job.job_id,
            payload={"job_id": job.job_id, "reason": reason, "quiet_since_ms": quiet_since_ms},
            id=f"{job.job_id}:flag:{quiet_since_ms}",
        )
        published = self.orchestrator.registry.bus.publish(message)
        if published.duplicate:
            return False
        log.info("job %s flagged: %s", job.job_id, reason)
        return True


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _epoch(stamp: str | None) -> float:
    """Seconds since the epoch of a registry ISO stamp ("...Z"); 0 when absent."""
    if not stamp:
        return 0.0
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
