"""One supervision pass: observe every running job's agent, end the jobs that are done,
flag the quiet ones, beat for them, and reconcile sessions with tmux.

Liveness does not trust self-reports: a pane is judged from the outside (see
observer.py), and the heartbeat is written on the agent's behalf. The pane log's
size and mtime are the output clock that survives between processes (tmux
pipe-pane appends every byte the agent prints), so a one-shot `orchestrate
reconcile` judges as well as the TUI's long-lived watcher.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from app.review.finished import tree_holds_work, under_review, work_finished
from app.settings import Settings
from app.supervision.observer import AgentObserver, Verdict
from app.tmux.driver import TmuxDriver
from app.tmux.errors import PaneNotFound, TmuxError
from app.usage.budget import BudgetWatch, interrupt_if_working, pause
from bus import heartbeats
from bus.messages import Outgoing
from registry.errors import IllegalTransition, RegistryError
from registry.jobs import Registry
from registry.records import Job
from registry.review import ReviewStore
from registry.vocabulary import Activity, JobStatus, MessageType
from registry.wording import counted

log = logging.getLogger(__name__)

WATCHER_AGENT = "orchestrate"
SCREEN_LINES = 40
INTERRUPT_AGAIN_SEC = 3.0
"""How long after a budget's interrupt a paused agent still seen working gets another:
past Claude Code's redraw after an Escape (a second Escape on its prompt opens a menu)."""


class Supervised(Protocol):
    """What a pass needs of the orchestrator (a Protocol: no import of it, no circle)."""

    settings: Settings
    registry: Registry

    def pane_log(self, job_id: str) -> Path: ...

    def panes_by_job(self) -> dict[str, str]: ...

    def reconcile_sessions(self) -> list[str]: ...


@dataclass
class ReconcileReport:
    """What one pass saw and did; `summary()` is the line `orchestrate reconcile` prints."""

    sampled: dict[str, str] = field(default_factory=dict)  # job id -> activity
    errored: dict[str, str] = field(default_factory=dict)  # job id -> reason
    completed: dict[str, str] = field(default_factory=dict)  # job id -> reason
    flagged: dict[str, str] = field(default_factory=dict)  # job id -> reason (new flags only)
    changed: dict[str, str] = field(default_factory=dict)  # job id -> new activity
    terminated_sessions: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)  # jobs whose lease ran out -> pending

    @property
    def acted(self) -> bool:
        """True when the pass changed something (not just sampled)."""
        return bool(
            self.errored
            or self.completed
            or self.flagged
            or self.changed
            or self.terminated_sessions
            or self.expired
        )

    def summary(self) -> str:
        """One line: panes by activity, then every change made."""
        counts: dict[str, int] = {}
        for state in self.sampled.values():
            counts[state] = counts.get(state, 0) + 1
        by_state = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        parts = [counted(len(self.sampled), "agent pane") + (f" ({by_state})" if by_state else "")]
        parts += [f"job {job} → {activity}" for job, activity in self.changed.items()]
        parts += [f"job {job} → completed: {why}" for job, why in self.completed.items()]
        parts += [f"job {job} → error: {why}" for job, why in self.errored.items()]
        parts += [f"job {job} flagged: {why}" for job, why in self.flagged.items()]
        parts += [f"session {label} → terminated" for label in self.terminated_sessions]
        parts += [f"job {job} lease expired → pending" for job in self.expired]
        return "; ".join(parts)


class Reconciler:
    """Holds the observer between passes; `run()` is one pass (thread-safe)."""

    def __init__(
        self,
        orchestrator: Supervised,
        driver: TmuxDriver,
        *,
        idle_grace_sec: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.orchestrator = orchestrator
        self.driver = driver
        self.clock = clock
        self.observer = AgentObserver(
            self._screen,
            state_dir=orchestrator.settings.state_dir,
            idle_grace_sec=idle_grace_sec,
        )
        self._lock = threading.Lock()
        self._output_lock = threading.Lock()
        self._budgets: BudgetWatch | None = None
        self._held: dict[str, float] = {}
        """Jobs this process paused by their budget: when it last sent their interrupt."""

    def run(self, only: str | None = None) -> ReconcileReport:
        """Expire leases, judge every running job's agent (or just ``only``), reconcile
        sessions with tmux."""
        with self._lock:
            orch = self.orchestrator
            report = ReconcileReport(expired=orch.registry.expire_leases() if not only else [])
            ours = [
                job
                for job in orch.registry.list(status=JobStatus.RUNNING)
                if (only is None or job.job_id == only)
                and orch.pane_log(job.job_id).exists()  # started in a pane by orchestrate
            ]
            panes = orch.panes_by_job() if ours else {}
            statuses = self.driver.pane_statuses(panes.values()) if panes else {}
            server_gone = bool(ours) and not panes and not self.driver.server_running()
            # this attempt's start, to the millisecond (claimed_at has whole seconds)
            running_since = orch.registry.running_since_ms(job.job_id for job in ours)
            ours = self._stop_spenders(ours, panes)
            now = self.clock()
            for job in ours:
                pane_id = panes.get(job.job_id)
                status = statuses.get(pane_id) if pane_id else None
                verdict = self.observer.look(
                    job,
                    status,
                    orch.pane_log(job.job_id),
                    now,
                    started_at=running_since.get(job.job_id, 0) / 1000,
                    worked=lambda job=job: self._worked(job.job_id),  # type: ignore[misc]
                    server_gone=server_gone,
                )
                self._apply(job, verdict, report)
            if only is None:
                self.observer.forget_all_but({job.job_id for job in ours})
                report.terminated_sessions = orch.reconcile_sessions()
            return report

    def _stop_spenders(self, jobs: list[Job], panes: dict[str, str]) -> list[Job]:
        """Pause the jobs past a budget (app/usage/budget.py), their turn interrupted;
        the jobs as they now are. A failure is logged, never the end of the pass."""
        orch = self.orchestrator
        if self._budgets is None:
            self._budgets = BudgetWatch(orch.registry, orch.settings.state_dir, os.environ)
        try:
            crossed = self._budgets.check(jobs)
        except Exception as exc:  # a locked database, a bad price table: the next pass
            log.warning("budgets not checked: %s", exc)
            return jobs
        paused = set()
        self._interrupt_again(jobs, panes)
        for over in crossed:
            screen, keys = self._pane_io(panes.get(over.job.job_id))
            try:
                said = pause(
                    orch.registry, orch.settings.state_dir, over.job, over.why, screen, keys
                )
            except (RegistryError, TmuxError) as exc:
                log.warning("job %s: not paused: %s", over.job.job_id, exc)
                continue
            log.info("job %s: %s", over.job.job_id, said)
            paused.add(over.job.job_id)
            self._held[over.job.job_id] = time.monotonic()
        if not paused:
            return jobs
        return [orch.registry.get(job.job_id) if job.job_id in paused else job for job in jobs]

    def _pane_io(
        self, pane_id: str | None
    ) -> tuple[Callable[[], list[str]], Callable[[tuple[str, ...]], None]]:
        """Read the pane's screen, and send it key names (nothing without a pane)."""

        def screen() -> list[str]:
            return self._screen(pane_id) if pane_id else []

        def keys(names: tuple[str, ...]) -> None:
            if pane_id:
                self.driver.send_key_names(pane_id, names)

        return screen, keys

    def _interrupt_again(self, jobs: list[Job], panes: Mapping[str, str]) -> None:
        """The jobs this process paused by their budget whose agent still works (the
        interrupt went unsent or unheard): interrupted again, at most every
        INTERRUPT_AGAIN_SEC, so a second Escape never lands before the first redrew."""
        now = time.monotonic()
        by_id = {job.job_id: job for job in jobs}
        for job_id, at in list(self._held.items()):
            job = by_id.get(job_id)
            if job is None or job.activity != Activity.PAUSED:
                del self._held[job_id]
                continue
            if now - at < INTERRUPT_AGAIN_SEC:
                continue
            screen, keys = self._pane_io(panes.get(job_id))
            try:
                if interrupt_if_working(job, self.orchestrator.settings.state_dir, screen, keys):
                    continue  # not working: nothing to stop
            except TmuxError as exc:
                log.warning("job %s: not interrupted again: %s", job_id, exc)
                continue
            log.info("job %s: paused, still working: interrupted again", job_id)
            self._held[job_id] = now

    def run_output(self) -> int:
        """A quick pass between full ones: new status sequences in running jobs' output
        (Codex's OSC 7501), recorded at once. Returns how many changes it recorded."""
        with self._output_lock:  # not the pass's lock: a long pass must not delay it
            orch = self.orchestrator
            recorded = 0
            now = self.clock()
            for job in orch.registry.list(status=JobStatus.RUNNING):
                for seen in self.observer.look_at_output(job, orch.pane_log(job.job_id), now):
                    try:
                        if orch.registry.observe(job.job_id, seen) is not None:
                            recorded += 1
                    except RegistryError as exc:
                        log.info("job %s: activity not recorded: %s", job.job_id, exc)
            return recorded

    def _apply(self, job: Job, verdict: Verdict, report: ReconcileReport) -> None:
        """Record what the look found; end the job if it is over; flag it if quiet."""
        registry = self.orchestrator.registry
        activity = job.activity or Activity.STARTING
        for observation in verdict.observations:
            try:
                if registry.observe(job.job_id, observation) is not None:
                    activity = observation.activity
                    report.changed[job.job_id] = activity
            except RegistryError as exc:  # it ended meanwhile, or the database is busy
                log.info("job %s: activity not recorded: %s", job.job_id, exc)
        report.sampled[job.job_id] = activity
        self._beat(job, verdict.heartbeat)
        if verdict.idle_done and job.activity == Activity.PAUSED:
            return  # its turn was stopped on purpose: the idle prompt is not its end
        if verdict.idle_done and not self._still_as_seen(job):
            return  # it moved on while this pass looked: the next pass judges it afresh
        if verdict.idle_done and verdict.finish is not None and self._round_done(job, verdict):
            return
        if verdict.finish is not None:
            status, reason = verdict.finish
            if self._finish(job.job_id, status, reason):
                target = report.completed if status == JobStatus.COMPLETED else report.errored
                target[job.job_id] = reason
            return
        self._flag_if_quiet(job, activity, report)

    def _still_as_seen(self, job: Job) -> bool:
        """Whether the job's activity is still the one this pass looked at: a hook
        can record the agent working (its next task, requested changes) between the
        pass reading the job and acting on its idle, which would then end a turn that
        has just begun."""
        try:
            now = self.orchestrator.registry.get(job.job_id)
        except RegistryError:
            return False
        return (now.activity, now.activity_at_ms) == (job.activity, job.activity_at_ms)

    def _worked(self, job_id: str) -> bool:
        """Whether the job's agent has worked on its task: seen working or asking, or
        (a work-tree job) its tree holds work no look caught it doing."""
        registry = self.orchestrator.registry
        return registry.has_worked(job_id) or tree_holds_work(ReviewStore(registry.bus), job_id)

    def _round_done(self, job: Job, verdict: Verdict) -> bool:
        """A work-tree job whose agent went idle after its task: its review comes up
        (IN_REVIEW) and the job stays running, idle, for changes to be requested; it
        ends when its branch is merged or discarded. False for any other job."""
        reviews = ReviewStore(self.orchestrator.registry.bus)
        if not under_review(reviews, job.job_id):
            return False
        reason = verdict.finish[1] if verdict.finish else "agent finished its task"
        try:
            if work_finished(reviews, job.job_id, reason) is not None:
                log.info("job %s: up for review", job.job_id)
        except RegistryError as exc:  # another process moved it first
            log.info("job %s: review not moved: %s", job.job_id, exc)
        return True

    def _finish(self, job_id: str, status: str, reason: str) -> bool:
        """Move a still-running job to ``status``; False if it already moved on."""
        registry = self.orchestrator.registry
        try:
            if registry.get(job_id).status != JobStatus.RUNNING:
                return False
            registry.set_status(job_id, status, reason)
        except IllegalTransition:  # it ended (or was cancelled) in between
            return False
        log.info("job %s → %s: %s", job_id, status, reason)
        return True

    def _flag_if_quiet(self, job: Job, activity: str, report: ReconcileReport) -> None:
        """One `job.flag` per quiet spell longer than the job's idle timeout."""
        now = self.clock()
        output_at = _mtime(self.orchestrator.pane_log(job.job_id))
        quiet_since = max(output_at, _epoch(job.last_event_at), _epoch(job.claimed_at))
        quiet_for = now - quiet_since
        if quiet_for <= job.idle_timeout_sec or activity == Activity.IDLE:
            return
        doing = "waiting for permission" if activity == Activity.WAITING else "no pane output"
        reason = (
            f"{doing} and no events for {quiet_for:.0f} s (idle timeout {job.idle_timeout_sec} s)"
        )
        if self._flag(job, reason, int(quiet_since * 1000)):
            report.flagged[job.job_id] = reason

    def _screen(self, pane_id: str) -> list[str]:
        try:
            return self.driver.capture(pane_id, SCREEN_LINES)
        except PaneNotFound:
            return []

    def _beat(self, job: Job, state: str) -> None:
        """The heartbeat the agent would write, written for it from what was observed."""
        conn = self.orchestrator.registry.db.conn
        heartbeats.write(conn, job.job_id, state, current_task=job.job_id)

    def _flag(self, job: Job, reason: str, quiet_since_ms: int) -> bool:
        """Publish one `job.flag` per quiet spell (its id is fixed, so repeats are dropped)."""
        message = Outgoing(
            type=MessageType.JOB_FLAG,
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
