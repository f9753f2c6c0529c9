"""The orchestrator: the registry's jobs and sessions, acted out in tmux panes.

One object the CLI commands and the TUI share. The registry decides what is
legal (job and session state machines); the tmux driver does what was decided;
this class keeps the two in step, in that order: a refused move never touches
tmux, and a tmux failure after a registry move is recorded on the job.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from app.agents import adapter_for
from app.agents.env import pane_environment
from app.agents.hook import APPROVAL_WAIT_ENV, APPROVALS_ENV
from app.approvals.answer import Answered, answer_question
from app.orchestration import launches, supervisor
from app.orchestration.errors import AgentNotStarted, UnknownAgent
from app.orchestration.reconcile import Reconciler, ReconcileReport
from app.review.worktree import WorktreePlan, prepare_worktree
from app.settings import Settings, idle_grace_from_env
from app.tmux.attach import AttachCommand, attach_command
from app.tmux.driver import TmuxDriver
from app.tmux.errors import InvalidStopMode, PaneNotFound, TmuxError
from app.tmux.names import session_name_for
from app.tmux.panes import JOB_OPTION
from registry import states
from registry.errors import IllegalTransition, RegistryError, SessionNotFound
from registry.records import DEFAULT_IDLE_TIMEOUT_SEC, DEFAULT_TIMEOUT_SEC, Job, check_label
from registry.sessions import Session, SessionStore
from registry.vocabulary import Answer

log = logging.getLogger(__name__)

DEFAULT_APPROVAL_WAIT_SEC = 120.0
CANCEL_GRACE_SEC = 5.0
"""How long a cancelled agent gets to exit on its own keys before its pane is killed."""


class Orchestrator:
    """Submit, cancel, resume, stop, answer and reconcile, for the CLI and the TUI."""

    def __init__(self, settings: Settings, *, tmux_socket: str | None = None) -> None:
        self.settings = settings
        self.tmux_socket = tmux_socket
        self.registry = settings.open_registry()
        self.sessions = SessionStore(self.registry.bus)
        self._lock = threading.Lock()
        self._driver: TmuxDriver | None = None
        self._reconciler: Reconciler | None = None

    @property
    def driver(self) -> TmuxDriver:
        """The tmux driver, made on first use (TmuxNotInstalled if there is no tmux).

        Made under a lock: the TUI calls in from several worker threads.
        """
        with self._lock:
            if self._driver is None:
                owner = str(self.settings.state_dir.resolve())
                self._driver = TmuxDriver(self.tmux_socket, owner=owner)
            return self._driver

    @property
    def reconciler(self) -> Reconciler:
        """The liveness watcher; it remembers pane samples between passes."""
        driver = self.driver
        with self._lock:
            if self._reconciler is None:
                self._reconciler = Reconciler(self, driver, idle_grace_sec=idle_grace_from_env())
            return self._reconciler

    # -- paths ------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        """`<state>/logs/<job>/`: prompt, launch script, pane log, next to the audit log."""
        return self.settings.state_dir / "logs" / job_id

    def pane_log(self, job_id: str) -> Path:
        """The job's pane output, kept by tmux pipe-pane; it outlives the pane."""
        return self.job_dir(job_id) / "pane.log"

    # -- jobs ---------------------------------------------------------------------

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
        driver = self.driver  # TmuxNotInstalled before anything is stored
        session_name_for(agent_session)  # InvalidLabel before anything is stored
        check_label("agent_session", agent_session)
        if approvals not in launches.APPROVAL_MODES:
            raise UnknownAgent(f"approvals must be one of {', '.join(launches.APPROVAL_MODES)}")
        submitter = dict(os.environ if env is None else env)
        command = agent_cmd or self._session_agent_cmd(agent_session)
        adapter = launches.adapter_checked(agent, command, self.settings.state_dir, submitter)
        directory = Path(workdir or Path.cwd()).resolve()
        driver.server_running()  # TmuxServerUnreachable before anything is stored
        driver.check_owner(agent_session)  # another project's session: refused first
        job = self.registry.register(
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
            directory = prepare_worktree(self.settings, self.registry, job.job_id, worktree).workdir
        record = launches.LaunchRecord(command, str(directory), approvals, approval_wait_sec)
        record.save(self.job_dir(job.job_id))
        return self._start(job, record, submitter, why="picked by submit")

    def _start(
        self,
        job: Job,
        record: launches.LaunchRecord,
        submitter: Mapping[str, str],
        *,
        why: str,
        resume: bool = False,
    ) -> Job:
        """Move a pending job to running and start its agent pane (the job errs if tmux fails)."""
        label = job.agent_session
        job_dir = self.job_dir(job.job_id)
        adapter = adapter_for(job.agent, self.settings.state_dir, submitter)
        plan = launches.plan_for(
            adapter, launches.context_for(job, job_dir, record, submitter), record, resume=resume
        )
        if plan.agent_session_id and plan.agent_session_id != job.agent_session_id:
            job = self.registry.set_agent_session_id(job.job_id, plan.agent_session_id)
        reports = adapter.gets_instructions or plan.deliver == "file"
        prompt_file = launches.write_prompt(
            job_dir,
            plan.prompt or job.prompt,
            with_instructions=launches.instructions(job.job_id) if reports else None,
        )
        workdir = Path(record.workdir)
        # tmux first, then the record: a reconcile pass in between (a TUI running
        # beside this submit) must never see a recorded session with no tmux session.
        try:
            self.driver.ensure_session(label, start_directory=workdir)
        except TmuxError as error:
            reason = f"could not create tmux session {label!r}: {error}"
            self.registry.set_status(job.job_id, "error", reason)
            raise AgentNotStarted(f"job {job.job_id}: {reason}") from error
        self._ensure_session_record(label, job.agent, f"job {job.job_id} submitted")
        running = self.registry.set_status(
            job.job_id, "running", f"{why} into tmux session {label!r}"
        )
        env = pane_environment(
            submitter,
            state_dir=self.settings.state_dir,
            job_id=job.job_id,
            token=job.auth_token,
            tmux_socket=self.driver.socket_name,
            extra={
                **plan.env,
                APPROVALS_ENV: record.approvals,
                APPROVAL_WAIT_ENV: str(record.approval_wait_sec),
            },
        )
        try:
            self.driver.start_agent_pane(
                label,
                job.job_id,
                plan.argv,
                env,
                prompt_file,
                self.pane_log(job.job_id),
                f"orchestrate: job {job.job_id} · agent {job.agent} · session {label}",
                start_directory=workdir,
                deliver=plan.deliver,
                agent=job.agent,
                extra=plan.extra,
            )
        except TmuxError as error:
            reason = f"could not start the agent pane: {error}"
            self.registry.set_status(job.job_id, "error", reason)
            raise AgentNotStarted(f"job {job.job_id}: {reason}") from error
        supervisor.ensure_started(self.settings.state_dir, self.driver.socket_name)
        return running

    def _session_agent_cmd(self, label: str) -> list[str] | None:
        """The agent command recorded by `session create --agent-cmd`, if any."""
        try:
            recorded = self.sessions.get(label).agent_cmd
        except SessionNotFound:
            return None
        return launches.split_command(recorded) if recorded else None

    def _ensure_session_record(self, label: str, agent: str, why: str) -> Session:
        """The session record for `label`, made running (created, re-created or resumed)."""
        try:
            session = self.sessions.get(label)
        except SessionNotFound:
            session = None
        if session is None or session.state == "terminated":
            return self.sessions.create(
                label,
                agent,
                tmux_session=session_name_for(label),
                tmux_socket=self.driver.socket_name,
                reason=why,
            )
        if session.state != "running":
            return self.sessions.resume(label, why)
        return session

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
        job = self.registry.cancel(job_id, reason or f"cancelled by {by}")
        self.stop_agent(job, grace_sec=grace_sec)
        return job

    def stop_agent(self, job: Job, *, grace_sec: float = CANCEL_GRACE_SEC) -> bool:
        """Ask the job's agent to stop, then kill its pane; True if a pane was stopped.
        A job never started in a pane (a queue worker's) has nothing to stop."""
        if not self.pane_log(job.job_id).exists():
            return False
        pane_id = self.pane_for_job(job.job_id)
        if pane_id is None:
            return False
        if self.driver.pane_alive(pane_id):
            keys = adapter_for(job.agent, self.settings.state_dir).keys
            with contextlib.suppress(TmuxError):
                self.driver.send_key_names(pane_id, (*keys.interrupt, *keys.exit))
            deadline = time.monotonic() + grace_sec
            while time.monotonic() < deadline and self.driver.pane_alive(pane_id):
                time.sleep(0.1)
        with contextlib.suppress(PaneNotFound):
            self.driver.kill_pane(pane_id)
        return True

    def resume_job(
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
        job = self.registry.get(job_id)
        record = launches.LaunchRecord.load(self.job_dir(job_id))
        if record is None:
            return self.registry.resume(job_id, reason)
        submitter = dict(os.environ if env is None else env)
        launches.adapter_checked(job.agent, record.agent_cmd, self.settings.state_dir, submitter)
        if job.status == "running" and job.activity == "interrupted":
            job = self.registry.requeue_interrupted(job_id, reason)
        else:
            job = self.registry.resume(job_id, reason)
        old_pane = self.pane_for_job(job_id)
        if old_pane is not None:  # the last attempt's pane: one pane per job
            with contextlib.suppress(PaneNotFound):
                self.driver.kill_pane(old_pane)
        # retry_count only counts lease expiries: count every return to pending instead
        attempt = 1 + sum(
            1
            for change in self.registry.history(job_id)
            if change.from_state is not None and change.to_state == "pending"
        )
        return self._start(job, record, submitter, why=f"resumed (attempt {attempt})", resume=True)

    def interrupted_jobs(self) -> list[Job]:
        """Live jobs whose agent was lost with its pane (after a supervision pass)."""
        return [
            job for job in self.registry.list(status="running") if job.activity == "interrupted"
        ]

    def resume_interrupted(
        self, *, env: Mapping[str, str] | None = None, failed: dict[str, str] | None = None
    ) -> list[Job]:
        """Bring every interrupted agent back in a new pane (one key in the control room,
        `job resume --all-interrupted`), with the environment of whoever resumes them
        (default: this process's). One that cannot start (its agent uninstalled since)
        does not stop the others: its reason goes into ``failed`` (job id -> reason)."""
        if self.driver.server_running() or self.registry.list(status="running"):
            self.reconcile()  # a reboot: find them first
        resumed = []
        for job in self.interrupted_jobs():
            try:
                why = "resumed after an interruption"
                resumed.append(self.resume_job(job.job_id, env=env, reason=why))
            except (RegistryError, TmuxError) as exc:
                log.info("job %s not resumed: %s", job.job_id, exc)
                if failed is not None:
                    failed[job.job_id] = str(exc)
        return resumed

    def pane_for_job(self, job_id: str) -> str | None:
        """The job's agent pane, or None (no tmux server, or the pane is gone)."""
        return self.panes_by_job().get(job_id)

    def panes_by_job(self) -> dict[str, str]:
        """Every agent pane on the server by job id, in one tmux call (newest pane wins)."""
        if not self.driver.server_running():
            return {}
        result = self.driver.server.cmd("list-panes", "-a", "-F", f"#{{pane_id}} #{{{JOB_OPTION}}}")
        panes: dict[str, str] = {}
        for line in result.stdout if result.returncode == 0 else []:
            pane_id, _, job_id = line.partition(" ")
            if job_id:
                panes[job_id] = pane_id
        return panes

    def check_job_pane(self, job_id: str) -> str | None:
        """One supervision look at a running job's agent (see observer.py); the reason
        when it failed the job, else None. The pane is read before the job, so every
        event the agent published before exiting is recorded when it is judged."""
        if not self.pane_log(job_id).exists():
            return None  # not started by orchestrate: nothing to judge by
        return self.reconciler.run(only=job_id).errored.get(job_id)

    # -- answering ------------------------------------------------------------------

    def launch_record(self, job_id: str) -> launches.LaunchRecord | None:
        """How the job's agent was started (None: never in a pane): whether its
        questions wait for a decision (app/approvals/question.py)."""
        return launches.LaunchRecord.load(self.job_dir(job_id))

    def answer(
        self, job_id: str, reply: Answer, *, by: str = "cli", until_recorded: bool = False
    ) -> Answered:
        """Answer the question the job's agent waits on: the one path, app/approvals/."""
        return answer_question(self, job_id, reply, by=by, until_recorded=until_recorded)

    # -- talking to an agent ------------------------------------------------------

    def send_input(self, job_id: str, text: str, *, by: str = "cli") -> int:
        """Give the job's agent free text, as a bracketed paste then Enter (never
        send-keys of raw text), and record it as an `input` event: who, how much,
        how long it took. Returns the number of characters sent.

        A completed job whose agent is still at its prompt (`--done-when idle` keeps
        the pane for this) runs again first: its follow-up turn is supervised as the
        first was, so what the agent then asks reaches the control room."""
        if not text.strip():
            raise UnknownAgent("nothing to send: the text is empty")
        job = self.registry.get(job_id)
        pane_id = self.pane_for_job(job_id)
        if pane_id is None or not self.driver.pane_alive(pane_id):
            raise AgentNotStarted(f"job {job_id} has no live agent pane to send to")
        if job.status == "completed":
            job = self.registry.follow_up(job_id, f"follow-up from {by}")
            supervisor.ensure_started(self.settings.state_dir, self.driver.socket_name)
        started = time.monotonic()
        self.driver.paste_text(pane_id, text)
        took_ms = int((time.monotonic() - started) * 1000)
        if job.status == "running":
            data = {"kind": "message", "by": by, "chars": len(text), "took_ms": took_ms}
            with contextlib.suppress(RegistryError):
                self.registry.publish(job_id, "input", f"{len(text)} characters from {by}", data)
        return len(text)

    def attach_argv(self, job_id: str) -> list[str]:
        """The tmux command that puts a person into the job's pane (see attach_command)."""
        return self.attach_command(job_id).argv

    def attach_command(
        self, job_id: str, environ: Mapping[str, str] | None = None
    ) -> AttachCommand:
        """How to put a person into the job's pane from where they are (`environ`:
        their environment, default this process's): attach, switch client inside this
        tmux server, or nest inside another (app/tmux/attach.py); ctrl+q comes back."""
        self.registry.get(job_id)
        pane_id = self.pane_for_job(job_id)
        if pane_id is None:
            raise AgentNotStarted(f"job {job_id} has no agent pane to attach to")
        where = os.environ if environ is None else environ
        return attach_command(self.driver.socket_name, pane_id, where)

    # -- sessions -------------------------------------------------------------------

    def create_session(
        self, label: str, agent: str = "demo", *, agent_cmd: str = "", workdir: str | None = None
    ) -> Session:
        """Record a running session and create its tmux session (no agent runs until a submit)."""
        driver = self.driver
        name = session_name_for(label)
        if agent_cmd:
            launches.split_command(agent_cmd)
        driver.check_owner(label)  # another project's session: refused before the record
        try:
            existing: Session | None = self.sessions.get(label)
        except SessionNotFound:
            existing = None
        vanished = existing is not None and not driver.has_session(label)
        if existing is not None and existing.state != "terminated" and vanished:
            self._terminate_vanished(existing)
        session = self.sessions.create(
            label,
            agent,
            agent_cmd=agent_cmd,
            tmux_session=name,
            workdir=workdir,
            tmux_socket=driver.socket_name,
        )
        driver.ensure_session(label, start_directory=workdir)
        return session

    def list_sessions(self) -> list[Session]:
        """Session records, reconciled with live tmux first (vanished ones become terminated)."""
        self.reconcile_sessions()
        return self.sessions.list()

    def reconcile_sessions(self) -> list[str]:
        """Mark every recorded, not terminated session whose tmux session is gone; the labels.

        Only sessions of this driver's tmux server are judged: a session started
        under another ORCHESTRATE_TMUX_SOCKET is not "gone" because it is not here.
        """
        live = {info.label for info in self.driver.list_sessions()}
        gone = []
        socket = self.driver.socket_name
        for session in self.sessions.list():
            if session.tmux_socket not in (None, socket):
                continue
            if session.state != "terminated" and session.label not in live:
                self._terminate_vanished(session)
                gone.append(session.label)
        return gone

    def _terminate_vanished(self, session: Session) -> None:
        with contextlib.suppress(IllegalTransition):  # another process got there first
            self.sessions.set_state(session.label, "", "tmux session gone", transition="reconcile")

    def stop_session(self, label: str, mode: str) -> Session:
        """graceful: cancel its running jobs, ask agents to exit, keep tmux -> stopped;
        soft: registry only, tmux and agents left alone -> archived;
        hard: cancel its running jobs, kill the tmux session -> terminated."""
        transitions = {"graceful": "stop", "soft": "soft_stop", "hard": "hard_stop"}
        if mode not in transitions:
            raise InvalidStopMode(f"stop mode must be graceful, soft or hard, not {mode!r}")
        session = self.sessions.get(label)
        states.next_state(states.SESSION, session.state, transitions[mode], label)
        if mode != "soft":
            self.driver.check_owner(label)  # before cancelling anything on its behalf
            for job in self.registry.list(status="running", agent_session=label):
                with contextlib.suppress(IllegalTransition):
                    self.registry.cancel(job.job_id, f"session {label} stopped ({mode})")
        keys = adapter_for(session.agent, self.settings.state_dir).keys
        result = self.driver.stop(label, mode, exit_keys=(*keys.interrupt, *keys.exit))
        if result.still_running_panes:
            log.warning(
                "session %s: %d agent pane(s) did not exit after the exit keys: %s",
                label,
                len(result.still_running_panes),
                " ".join(result.still_running_panes),
            )
        if not result.session_existed and mode != "hard":
            self._terminate_vanished(session)
            return self.sessions.get(label)
        return self.sessions.stop(label, mode)

    def resume_session(self, label: str, resume_cmd: Sequence[str] | None = None) -> Session:
        """stopped|archived -> running; restarts the agent's conversation where there is one.

        An archived session whose tmux session is alive needs nothing in tmux.
        Otherwise the resume command (given, else per agent kind) starts in the
        session, logged to `<state>/logs/sessions/<tmux name>/resume.log`.
        """
        session = self.sessions.get(label)
        states.next_state(states.SESSION, session.state, "resume", label)
        driver = self.driver
        alive = driver.has_session(label)
        argv = list(resume_cmd) if resume_cmd else launches.session_resume_command(session.agent)
        if not (session.state == "archived" and alive):
            if argv:
                log_path = self.settings.state_dir / "logs" / "sessions"
                log_path = log_path / session_name_for(label) / "resume.log"
                env = pane_environment(
                    os.environ,
                    state_dir=self.settings.state_dir,
                    job_id="",
                    token=None,
                    tmux_socket=driver.socket_name,
                )
                env.pop("ORCHESTRATE_JOB", None)
                driver.resume(label, argv, env, log_path, start_directory=session.workdir)
            else:
                driver.ensure_session(label, start_directory=session.workdir)
        return self.sessions.resume(label)

    # -- watching -------------------------------------------------------------------

    def tmux_running(self) -> bool:
        """Whether this orchestrator's tmux server runs."""
        return self.driver.server_running()

    def reconcile_output(self) -> int:
        """A quick look at running agents' status sequences (see Reconciler.run_output)."""
        return self.reconciler.run_output()

    def reconcile(self) -> ReconcileReport:
        """One liveness pass over running jobs and recorded sessions (see Reconciler)."""
        return self.reconciler.run()

    def control_room_split(self, job_id: str) -> None:
        """Open the seed 003 split for a job: pane log tail (70 %) over its event follow (30 %)."""
        self.registry.get(job_id)  # JobNotFound for a typo
        log_path = self.pane_log(job_id)
        # Not created here: `tail -F` waits for it, and a pane log is the mark of a job
        # whose agent orchestrate started, so an empty one made a job picked by hand
        # (no pane) look like an agent that had vanished: the next supervision pass
        # failed it (later: marked it interrupted).
        log_path.parent.mkdir(parents=True, exist_ok=True)
        follow = [sys.executable, "-m", "app", "--state-dir", str(self.settings.state_dir)]
        follow += ["msg", "follow", "--task", job_id]
        self.driver.control_room_split(job_id, log_path, follow)
