"""The orchestrator: one object the CLI commands and the TUI share, a thin facade.

Jobs (``jobs.py``), sessions (``sessions.py``) and panes (``panes.py``) each do
their own part over one shared context (``context.py``: the registry and the tmux
driver); supervision's passes (``app/supervision/``) are made and run from here,
so callers hold one object and never the parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from app.approvals.answer import Answered, answer_question
from app.control.context import ControlContext
from app.control.jobs import CANCEL_GRACE_SEC, DEFAULT_APPROVAL_WAIT_SEC, JobControl
from app.control.launch import LaunchRecord
from app.control.panes import PaneControl
from app.control.sessions import SessionControl
from app.policy.keys import PolicyByKeys
from app.review.worktree import WorktreePlan
from app.settings import Settings, idle_grace_from_env
from app.supervision.reconcile import Reconciler, ReconcileReport
from app.tmux.attach import AttachCommand
from app.tmux.driver import TmuxDriver
from registry.records import DEFAULT_IDLE_TIMEOUT_SEC, DEFAULT_TIMEOUT_SEC, Job
from registry.sessions import Session
from registry.vocabulary import Activity, Answer

__all__ = ["CANCEL_GRACE_SEC", "DEFAULT_APPROVAL_WAIT_SEC", "Orchestrator"]


class Orchestrator:
    """Submit, cancel, resume, stop, answer and reconcile, for the CLI and the TUI."""

    def __init__(self, settings: Settings, *, tmux_socket: str | None = None) -> None:
        self.context = ControlContext(settings, tmux_socket=tmux_socket)
        self.settings = settings
        self.tmux_socket = tmux_socket
        self.registry = self.context.registry
        self.sessions = self.context.sessions
        self.pane_control = PaneControl(self.context)
        self.session_control = SessionControl(self.context)
        self.job_control = JobControl(
            self.context, self.pane_control, self.session_control, self.reconcile
        )
        self._reconciler: Reconciler | None = None
        self.policy_by_keys = PolicyByKeys(self)

    @property
    def driver(self) -> TmuxDriver:
        """The tmux driver, made on first use (TmuxNotInstalled if there is no tmux)."""
        return self.context.driver

    @property
    def reconciler(self) -> Reconciler:
        """The liveness watcher; it remembers pane samples between passes."""
        driver = self.driver
        with self.context.lock:
            if self._reconciler is None:
                self._reconciler = Reconciler(self, driver, idle_grace_sec=idle_grace_from_env())
            return self._reconciler

    # -- paths ------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        """`<state>/logs/<job>/`: prompt, launch script, pane log, next to the audit log."""
        return self.context.job_dir(job_id)

    def pane_log(self, job_id: str) -> Path:
        """The job's pane output, kept by tmux pipe-pane; it outlives the pane."""
        return self.context.pane_log(job_id)

    # -- jobs (jobs.py) ---------------------------------------------------------------

    def submit(
        self,
        prompt: str,
        agent: str,
        agent_session: str,
        *,
        agent_cmd: list[str] | None = None,
        timeout_sec: int = DEFAULT_TIMEOUT_SEC,
        idle_timeout_sec: int = DEFAULT_IDLE_TIMEOUT_SEC,
        artifacts: Sequence[str] = (),
        sign: bool = True,
        workdir: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        done_when: str | None = None,
        approvals: str = "agent",
        approval_wait_sec: float = DEFAULT_APPROVAL_WAIT_SEC,
        broker: Mapping[str, object] | None = None,
        worktree: WorktreePlan | None = None,
    ) -> Job:
        """Register a job and start its agent in a pane (see JobControl.submit)."""
        return self.job_control.submit(
            prompt,
            agent,
            agent_session,
            agent_cmd=agent_cmd,
            timeout_sec=timeout_sec,
            idle_timeout_sec=idle_timeout_sec,
            artifacts=artifacts,
            sign=sign,
            workdir=workdir,
            env=env,
            done_when=done_when,
            approvals=approvals,
            approval_wait_sec=approval_wait_sec,
            broker=broker,
            worktree=worktree,
        )

    def cancel(
        self,
        job_id: str,
        *,
        by: str = "user",
        reason: str | None = None,
        grace_sec: float = CANCEL_GRACE_SEC,
    ) -> Job:
        """Cancel the job, then stop its agent (see JobControl.cancel)."""
        return self.job_control.cancel(job_id, by=by, reason=reason, grace_sec=grace_sec)

    def stop_agent(self, job: Job, *, grace_sec: float = CANCEL_GRACE_SEC) -> bool:
        """Ask the job's agent to stop, then kill its pane (see PaneControl.stop_agent)."""
        return self.pane_control.stop_agent(job, grace_sec=grace_sec)

    def resume_job(
        self,
        job_id: str,
        *,
        env: Mapping[str, str] | None = None,
        reason: str = "resumed by user",
    ) -> Job:
        """Start the job's agent again in a new pane (see JobControl.resume)."""
        return self.job_control.resume(job_id, env=env, reason=reason)

    def interrupted_jobs(self) -> list[Job]:
        """Live jobs whose agent was lost with its pane (after a supervision pass)."""
        return self.job_control.interrupted()

    def resume_interrupted(
        self, *, env: Mapping[str, str] | None = None, failed: dict[str, str] | None = None
    ) -> list[Job]:
        """Bring every interrupted agent back in a new pane (see JobControl.resume_interrupted)."""
        return self.job_control.resume_interrupted(env=env, failed=failed)

    # -- panes (panes.py) ---------------------------------------------------------------

    def pane_for_job(self, job_id: str) -> str | None:
        """The job's agent pane, or None (no tmux server, or the pane is gone)."""
        return self.pane_control.pane_for_job(job_id)

    def panes_by_job(self) -> dict[str, str]:
        """Every agent pane on the server by job id, in one tmux call (newest pane wins)."""
        return self.pane_control.panes_by_job()

    def check_job_pane(self, job_id: str) -> str | None:
        """One supervision look at a running job's agent (see observer.py); the reason
        when it failed the job, else None. The pane is read before the job, so every
        event the agent published before exiting is recorded when it is judged."""
        if not self.pane_log(job_id).exists():
            return None  # not started by orchestrate: nothing to judge by
        return self.reconciler.run(only=job_id).errored.get(job_id)

    def send_input(self, job_id: str, text: str, *, by: str = "cli") -> int:
        """Give the job's agent free text as a paste (see PaneControl.send_input)."""
        return self.pane_control.send_input(job_id, text, by=by)

    def attach_argv(self, job_id: str) -> list[str]:
        """The tmux command that puts a person into the job's pane (see attach_command)."""
        return self.attach_command(job_id).argv

    def attach_command(
        self, job_id: str, environ: Mapping[str, str] | None = None
    ) -> AttachCommand:
        """How to put a person into the job's pane (see PaneControl.attach_command)."""
        return self.pane_control.attach_command(job_id, environ)

    def control_room_split(self, job_id: str) -> None:
        """Open the seed 003 split for a job: pane log tail (70 %) over its event follow (30 %)."""
        self.pane_control.control_room_split(job_id)

    # -- answering ------------------------------------------------------------------

    def launch_record(self, job_id: str) -> LaunchRecord | None:
        """How the job's agent was started (None: never in a pane): whether its
        questions wait for a decision (app/approvals/question.py)."""
        return LaunchRecord.load(self.job_dir(job_id))

    def answer(
        self, job_id: str, reply: Answer, *, by: str = "cli", until_recorded: bool = False
    ) -> Answered:
        """Answer the question the job's agent waits on: the one path, app/approvals/."""
        return answer_question(self, job_id, reply, by=by, until_recorded=until_recorded)

    # -- sessions (sessions.py) -------------------------------------------------------

    def create_session(
        self, label: str, agent: str = "demo", *, agent_cmd: str = "", workdir: str | None = None
    ) -> Session:
        """Record a running session and create its tmux session (no agent runs until a submit)."""
        return self.session_control.create(label, agent, agent_cmd=agent_cmd, workdir=workdir)

    def list_sessions(self) -> list[Session]:
        """Session records, reconciled with live tmux first (vanished ones become terminated)."""
        self.reconcile_sessions()
        return self.sessions.list()

    def reconcile_sessions(self) -> list[str]:
        """Mark every recorded session whose tmux session is gone; the labels."""
        return self.session_control.reconcile()

    def stop_session(self, label: str, mode: str) -> Session:
        """Stop a session graceful, soft or hard (see SessionControl.stop)."""
        return self.session_control.stop(label, mode)

    def resume_session(self, label: str, resume_cmd: Sequence[str] | None = None) -> Session:
        """stopped|archived -> running (see SessionControl.resume)."""
        return self.session_control.resume(label, resume_cmd)

    # -- watching -------------------------------------------------------------------

    def tmux_running(self) -> bool:
        """Whether this orchestrator's tmux server runs."""
        return self.driver.server_running()

    def reconcile_output(self) -> int:
        """A quick look at running agents' status sequences (see Reconciler.run_output)."""
        return self.reconciler.run_output()

    def reconcile(self) -> ReconcileReport:
        """One liveness pass over running jobs and recorded sessions (see Reconciler),
        then the approval policy for what the agents answered by keys now ask."""
        report = self.reconciler.run()
        self.policy_by_keys.look([job_id for job_id, seen in report.sampled.items()
                                  if seen == Activity.WAITING])  # fmt: skip
        return report
