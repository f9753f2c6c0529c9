"""A job's agent in its pane: submitted, started, cancelled and resumed.

The registry decides what is legal (the job state machine); tmux does what was
decided, in that order: a refused move never touches tmux, and a tmux failure
after a registry move is recorded on the job.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from app.agents import adapter_for
from app.agents.env import pane_environment
from app.control import launch
from app.control.context import ControlContext
from app.control.errors import AgentNotStarted, UnknownAgent
from app.control.panes import PaneControl
from app.control.sessions import SessionControl
from app.review.worktree import WorktreePlan, prepare_worktree
from app.settings import APPROVAL_WAIT_ENV, APPROVALS_ENV
from app.supervision import supervisor
from app.supervision.reconcile import ReconcileReport
from app.tmux.errors import PaneNotFound, TmuxError
from app.tmux.names import session_name_for
from app.usage.locate import save_transcript_env
from registry.errors import RegistryError
from registry.records import DEFAULT_IDLE_TIMEOUT_SEC, DEFAULT_TIMEOUT_SEC, Job, check_label
from registry.vocabulary import Activity, JobStatus

log = logging.getLogger(__name__)

DEFAULT_APPROVAL_WAIT_SEC = 120.0
CANCEL_GRACE_SEC = 5.0
"""How long a cancelled agent gets to exit on its own keys before its pane is killed."""


class JobControl:
    """Jobs whose agents run in panes of the context's tmux server."""

    def __init__(
        self,
        context: ControlContext,
        panes: PaneControl,
        sessions: SessionControl,
        reconcile: Callable[[], ReconcileReport],
    ) -> None:
        self.context = context
        self.panes = panes
        self.sessions = sessions
        self.reconcile = reconcile
        """One supervision pass (the orchestrator's), run before interrupted jobs are resumed."""

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
        """Register a job and start its agent in a pane of `agent_session`'s tmux session.

        With a `worktree` plan (app/review/worktree.py, checked before this call),
        the job gets branch `orchestrate/<job_id>` and its own work tree, and the
        agent starts there.

        Everything that can be checked is checked before the job is stored (tmux
        present, the label usable as a tmux session name, the agent known and
        installed), so a refused submit leaves nothing behind. The job is moved
        to running before the agent starts, so the agent's first event lands on
        a running job. ``env`` is the submitter's environment (default: this
        process's): the agent gets the user's own keys and settings.
        """
        context = self.context
        driver = context.driver  # TmuxNotInstalled before anything is stored
        session_name_for(agent_session)  # InvalidLabel before anything is stored
        check_label("agent_session", agent_session)
        if approvals not in launch.APPROVAL_MODES:
            raise UnknownAgent(f"approvals must be one of {', '.join(launch.APPROVAL_MODES)}")
        submitter = dict(os.environ if env is None else env)
        command = agent_cmd or self.sessions.agent_cmd(agent_session)
        adapter = launch.adapter_checked(agent, command, context.settings.state_dir, submitter)
        directory = Path(workdir or Path.cwd()).resolve()
        driver.server_running()  # TmuxServerUnreachable before anything is stored
        driver.check_owner(agent_session)  # another project's session: refused first
        job = context.registry.register(
            prompt,
            agent,
            agent_session,
            timeout_sec=timeout_sec,
            idle_timeout_sec=idle_timeout_sec,
            expected_artifacts=artifacts,
            sign_events=sign,
            done_when=done_when or adapter.done_when,
            broker=broker,
        )
        if worktree is not None:
            tree = prepare_worktree(context.settings, context.registry, job.job_id, worktree)
            directory = tree.workdir
        record = launch.LaunchRecord(command, str(directory), approvals, approval_wait_sec)
        record.save(context.job_dir(job.job_id))
        return self.start(job, record, submitter, why="picked by submit")

    def start(
        self,
        job: Job,
        record: launch.LaunchRecord,
        submitter: Mapping[str, str],
        *,
        why: str,
        resume: bool = False,
    ) -> Job:
        """Move a pending job to running and start its agent pane (the job errs if tmux fails)."""
        context = self.context
        registry = context.registry
        driver = context.driver
        label = job.agent_session
        job_dir = context.job_dir(job.job_id)
        save_transcript_env(job_dir, submitter)  # where its spend is read (budgets)
        adapter = adapter_for(job.agent, context.settings.state_dir, submitter)
        plan = launch.plan_for(
            adapter, launch.context_for(job, job_dir, record, submitter), record, resume=resume
        )
        if plan.agent_session_id and plan.agent_session_id != job.agent_session_id:
            job = registry.set_agent_session_id(job.job_id, plan.agent_session_id)
        reports = adapter.gets_instructions or plan.deliver == "file"
        prompt_file = launch.write_prompt(
            job_dir,
            plan.prompt or job.prompt,
            with_instructions=launch.instructions(job.job_id) if reports else None,
        )
        workdir = Path(record.workdir)
        # tmux first, then the record: a reconcile pass in between (a TUI running
        # beside this submit) must never see a recorded session with no tmux session.
        try:
            driver.ensure_session(label, start_directory=workdir)
        except TmuxError as error:
            reason = f"could not create tmux session {label!r}: {error}"
            registry.set_status(job.job_id, JobStatus.ERROR, reason)
            raise AgentNotStarted(f"job {job.job_id}: {reason}") from error
        self.sessions.ensure_record(label, job.agent, f"job {job.job_id} submitted")
        running = registry.set_status(
            job.job_id, JobStatus.RUNNING, f"{why} into tmux session {label!r}"
        )
        env = pane_environment(
            submitter,
            state_dir=context.settings.state_dir,
            job_id=job.job_id,
            token=job.auth_token,
            tmux_socket=driver.socket_name,
            extra={
                **plan.env,
                APPROVALS_ENV: record.approvals,
                APPROVAL_WAIT_ENV: str(record.approval_wait_sec),
            },
        )
        try:
            driver.start_agent_pane(
                label,
                job.job_id,
                plan.argv,
                env,
                prompt_file,
                context.pane_log(job.job_id),
                f"orchestrate: job {job.job_id} · agent {job.agent} · session {label}",
                start_directory=workdir,
                deliver=plan.deliver,
                agent=job.agent,
                extra=plan.extra,
            )
        except TmuxError as error:
            reason = f"could not start the agent pane: {error}"
            registry.set_status(job.job_id, JobStatus.ERROR, reason)
            raise AgentNotStarted(f"job {job.job_id}: {reason}") from error
        supervisor.ensure_started(context.settings.state_dir, driver.socket_name)
        return running

    def cancel(
        self,
        job_id: str,
        *,
        by: str = "user",
        reason: str | None = None,
        grace_sec: float = CANCEL_GRACE_SEC,
    ) -> Job:
        """Cancel in the registry first (late events of the agent are then refused), then
        stop its agent: its own interrupt and exit keys, and the pane killed if it is
        still there after ``grace_sec``."""
        job = self.context.registry.cancel(job_id, reason or f"cancelled by {by}")
        self.panes.stop_agent(job, grace_sec=grace_sec)
        return job

    def resume(
        self,
        job_id: str,
        *,
        env: Mapping[str, str] | None = None,
        reason: str = "resumed by user",
    ) -> Job:
        """Start the job's agent again in a new pane, continuing its conversation where
        the agent can (its own session id), else afresh with the original prompt.

        An errored or cancelled job goes back to pending first; an interrupted one
        (running, its pane gone with the tmux server) is restarted as it is. A job
        never started in a pane (a queue worker's) is only queued again.
        """
        context = self.context
        registry = context.registry
        job = registry.get(job_id)
        record = launch.LaunchRecord.load(context.job_dir(job_id))
        if record is None:
            return registry.resume(job_id, reason)
        submitter = dict(os.environ if env is None else env)
        launch.adapter_checked(job.agent, record.agent_cmd, context.settings.state_dir, submitter)
        if job.status == JobStatus.RUNNING and job.activity == Activity.INTERRUPTED:
            job = registry.requeue_interrupted(job_id, reason)
        else:
            job = registry.resume(job_id, reason)
        old_pane = self.panes.pane_for_job(job_id)
        if old_pane is not None:  # the last attempt's pane: one pane per job
            with contextlib.suppress(PaneNotFound):
                context.driver.kill_pane(old_pane)
        # retry_count only counts lease expiries: count every return to pending instead
        attempt = 1 + sum(
            1
            for change in registry.history(job_id)
            if change.from_state is not None and change.to_state == JobStatus.PENDING
        )
        return self.start(job, record, submitter, why=f"resumed (attempt {attempt})", resume=True)

    def interrupted(self) -> list[Job]:
        """Live jobs whose agent was lost with its pane (after a supervision pass)."""
        return [
            job
            for job in self.context.registry.list(status=JobStatus.RUNNING)
            if job.activity == Activity.INTERRUPTED
        ]

    def resume_interrupted(
        self, *, env: Mapping[str, str] | None = None, failed: dict[str, str] | None = None
    ) -> list[Job]:
        """Bring every interrupted agent back in a new pane (one key in the control room,
        `job resume --all-interrupted`), with the environment of whoever resumes them
        (default: this process's). One that cannot start (its agent uninstalled since)
        does not stop the others: its reason goes into ``failed`` (job id -> reason)."""
        registry = self.context.registry
        if self.context.driver.server_running() or registry.list(status=JobStatus.RUNNING):
            self.reconcile()  # a reboot: find them first
        resumed = []
        for job in self.interrupted():
            try:
                why = "resumed after an interruption"
                resumed.append(self.resume(job.job_id, env=env, reason=why))
            except (RegistryError, TmuxError) as exc:
                log.info("job %s not resumed: %s", job.job_id, exc)
                if failed is not None:
                    failed[job.job_id] = str(exc)
        return resumed
