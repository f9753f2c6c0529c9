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
import random
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from app.orchestration import agents as agent_kinds
from app.orchestration.errors import AgentNotStarted, NotWaitingForPermission
from app.orchestration.reconcile import Reconciler, ReconcileReport, pane_gone_reason
from app.review.worktree import WorktreePlan, prepare_worktree
from app.settings import Settings
from app.tmux.driver import TmuxDriver
from app.tmux.errors import InvalidStopMode, TmuxError
from app.tmux.liveness import looks_like_permission_prompt
from app.tmux.names import session_name_for
from app.tmux.panes import JOB_OPTION
from registry import states
from registry.errors import IllegalTransition, SessionNotFound
from registry.records import DEFAULT_IDLE_TIMEOUT_SEC, DEFAULT_TIMEOUT_SEC, Job, check_label
from registry.sessions import Session, SessionStore

log = logging.getLogger(__name__)

# How long `answer` waits for a y/n prompt to be drawn after permission_required
# (agents publish the event just before they print the question).
PROMPT_GRACE_SEC = 3.0
DEMO_LABEL_PREFIX = "demo-"
MAX_DEMO_AGENTS = 20  # `demo --agents` and `watch --demo --agents` alike


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
                self._reconciler = Reconciler(self, driver)
            return self._reconciler

    # -- paths ------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        """`<state>/logs/<job>/`: prompt, launch script, pane log, next to the audit log."""
        return self.settings.state_dir / "logs" / job_id

    def pane_log(self, job_id: str) -> Path:
        """The job's pane output, kept by tmux pipe-pane; it outlives the pane."""
        return self.job_dir(job_id) / "pane.log"

    def pane_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of every pane: the state dir, and this install's `orchestrate` first
        on PATH so `orchestrate publish` in the pane reaches the same code and registry."""
        bin_dir = str(Path(sys.executable).parent)
        path = os.environ.get("PATH", "")
        env = {
            "ORCHESTRATE_HOME": str(self.settings.state_dir.resolve()),
            "ORCHESTRATE_TMUX_SOCKET": self.driver.socket_name,
            "PATH": f"{bin_dir}{os.pathsep}{path}" if path else bin_dir,
        }
        return {**env, **(extra or {})}

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
        worktree: WorktreePlan | None = None,
    ) -> Job:
        """Register a job and start its agent in a pane of `agent_session`'s tmux session.

        With a `worktree` plan (app/review/worktree.py, checked before this call),
        the job gets branch `orchestrate/<job_id>` and its own work tree, and the
        agent starts there.

        Everything that can be checked is checked before the job is stored (tmux
        present, the label usable as a tmux session name, an agent command known),
        so a refused submit leaves nothing behind. The job is moved to running
        (claimed for its label) before the agent starts, so the agent's first
        event lands on a running job.
        """
        driver = self.driver  # TmuxNotInstalled before anything is stored
        session_name_for(agent_session)  # InvalidLabel before anything is stored
        check_label("agent_session", agent_session)
        argv = agent_kinds.start_command(agent, agent_cmd or self._session_agent_cmd(agent_session))
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
        )
        if worktree is not None:
            directory = prepare_worktree(self.settings, self.registry, job.job_id, worktree).workdir
        agent_kinds.save_launch(self.job_dir(job.job_id), argv, directory)
        return self._start(job, argv, directory, env, why="picked by submit")

    def _start(
        self,
        job: Job,
        argv: Sequence[str],
        workdir: Path,
        env: Mapping[str, str] | None,
        *,
        why: str,
    ) -> Job:
        """Move a pending job to running and start its agent pane (the job errs if tmux fails)."""
        label = job.agent_session
        prompt_file = agent_kinds.write_prompt(self.job_dir(job.job_id), job.job_id, job.prompt)
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
        try:
            self.driver.start_agent_pane(
                label,
                job.job_id,
                argv,
                self.pane_env(env),
                prompt_file,
                self.pane_log(job.job_id),
                f"orchestrate: job {job.job_id} · agent {job.agent} · session {label}",
                start_directory=workdir,
            )
        except TmuxError as error:
            reason = f"could not start the agent pane: {error}"
            self.registry.set_status(job.job_id, "error", reason)
            raise AgentNotStarted(f"job {job.job_id}: {reason}") from error
        return running

    def _session_agent_cmd(self, label: str) -> list[str] | None:
        """The agent command recorded by `session create --agent-cmd`, if any."""
        try:
            recorded = self.sessions.get(label).agent_cmd
        except SessionNotFound:
            return None
        return agent_kinds.split_command(recorded) if recorded else None

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

    def cancel(self, job_id: str) -> Job:
        """Cancel in the registry first (late events of the agent are then refused), then C-c."""
        job = self.registry.cancel(job_id)
        pane_id = self.pane_for_job(job_id)
        if pane_id is not None and self.driver.pane_alive(pane_id):
            self.driver.server.cmd("send-keys", "-t", pane_id, "C-c")
        return job

    def resume_job(self, job_id: str) -> Job:
        """error|cancelled -> pending in the registry, then a new agent pane for the same job."""
        driver = self.driver
        job = self.registry.resume(job_id)
        saved = agent_kinds.load_launch(self.job_dir(job_id))
        if saved is not None:
            argv, workdir = saved
        else:  # registered by hand, never started in a pane
            argv = agent_kinds.start_command(job.agent, self._session_agent_cmd(job.agent_session))
            workdir = Path.cwd().resolve()
            agent_kinds.save_launch(self.job_dir(job_id), argv, workdir)
        old_pane = self.pane_for_job(job_id)
        if old_pane is not None:  # the last attempt's pane: one pane per job
            driver.kill_pane(old_pane)
        # retry_count only counts lease expiries: count every return to pending instead
        attempt = 1 + sum(
            1
            for change in self.registry.history(job_id)
            if change.from_state is not None and change.to_state == "pending"
        )
        return self._start(job, argv, workdir, None, why=f"resumed (attempt {attempt})")

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
        """One cheap look at a running job's pane; moves the job to error if it died.

        Returns the reason when the job was failed here, else None. The pane is
        read before the job, so every event the agent published before exiting
        is already recorded when the job's status is judged.
        """
        if not self.pane_log(job_id).exists():
            return None  # not started by orchestrate: nothing to judge by
        pane_id = self.pane_for_job(job_id)
        status = self.driver.pane_status(pane_id) if pane_id else None
        if status is not None and status.exists and not status.dead:
            return None
        return self.fail_if_running(job_id, pane_gone_reason(status))

    def fail_if_running(self, job_id: str, reason: str) -> str | None:
        """Move a still-running job to error with `reason`; None if it already moved on."""
        if self.registry.get(job_id).status != "running":
            return None
        try:
            self.registry.set_status(job_id, "error", reason)
        except IllegalTransition:  # it ended (or was cancelled) in between
            return None
        log.info("job %s: %s", job_id, reason)
        return reason

    # -- answering ------------------------------------------------------------------

    def answer(self, job_id: str, yes: bool, *, grace_sec: float = PROMPT_GRACE_SEC) -> None:
        """Type y or n into the job's own pane, only while it waits for exactly that.

        Refused (NotWaitingForPermission) unless the job is running, its last
        event is permission_required and its pane shows a y/n prompt. The driver
        confirms the pane reacted, retries once, then raises AnswerNotReceived.
        """
        job = self.registry.get(job_id)
        if job.status != "running" or job.last_event != "permission_required":
            last = job.last_event or "none"
            raise NotWaitingForPermission(
                f"job {job_id} is not waiting for permission ({job.status}, last event: {last})"
            )
        pane_id = self.pane_for_job(job_id)
        if pane_id is None or not self.driver.pane_alive(pane_id):
            raise NotWaitingForPermission(f"job {job_id} has no live agent pane to answer in")
        deadline = time.monotonic() + grace_sec
        while looks_like_permission_prompt(self.driver.capture(pane_id, 20)) is None:
            if time.monotonic() >= deadline:
                raise NotWaitingForPermission(
                    f"job {job_id}: its pane {pane_id} shows no y/n prompt; not typing into it"
                )
            time.sleep(0.05)
        self.driver.send_answer(pane_id, "y" if yes else "n")

    # -- sessions -------------------------------------------------------------------

    def create_session(
        self, label: str, agent: str = "demo", *, agent_cmd: str = "", workdir: str | None = None
    ) -> Session:
        """Record a running session and create its tmux session (no agent runs until a submit)."""
        driver = self.driver
        name = session_name_for(label)
        if agent_cmd:
            agent_kinds.split_command(agent_cmd)
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
        result = self.driver.stop(label, mode, exit_keys=agent_kinds.exit_keys(session.agent))
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
        argv = list(resume_cmd) if resume_cmd else agent_kinds.resume_command(session.agent)
        if not (session.state == "archived" and alive):
            if argv:
                log_path = self.settings.state_dir / "logs" / "sessions"
                log_path = log_path / session_name_for(label) / "resume.log"
                driver.resume(
                    label, argv, self.pane_env(), log_path, start_directory=session.workdir
                )
            else:
                driver.ensure_session(label, start_directory=session.workdir)
        return self.sessions.resume(label)

    # -- watching -------------------------------------------------------------------

    def reconcile(self) -> ReconcileReport:
        """One liveness pass over running jobs and recorded sessions (see Reconciler)."""
        return self.reconciler.run()

    def control_room_split(self, job_id: str) -> None:
        """Open the seed 003 split for a job: pane log tail (70 %) over its event follow (30 %)."""
        self.registry.get(job_id)  # JobNotFound for a typo
        log_path = self.pane_log(job_id)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.touch(mode=0o600, exist_ok=True)
        follow = [sys.executable, "-m", "app", "--state-dir", str(self.settings.state_dir)]
        follow += ["msg", "follow", "--task", job_id]
        self.driver.control_room_split(job_id, log_path, follow)

    # -- demo -------------------------------------------------------------------------

    def start_demo(
        self,
        agents: int = 3,
        *,
        seed: int = 0,
        delay: float | None = None,
        steps: int | None = None,
        workdir: str | Path | None = None,
    ) -> list[Job]:
        """Start `agents` demo agents, one per session `demo-1..N`, with varied behaviour.

        Agent 1 completes, 2 asks permission (and waits for `orchestrate answer`),
        3 fails; the rest complete. Delays of 0.5-1.5 s per step keep the control
        room moving; `seed` makes a run repeatable.
        """
        rng = random.Random(seed)
        started = []
        for number in range(1, agents + 1):
            role = ("completes", "asks permission", "fails")[(number - 1) % 3]
            if number > 3:
                role = "completes"
            argv = agent_kinds.start_command("demo")
            argv[-1:-1] = [
                "--steps",
                str(steps or rng.randint(4, 6)),
                "--delay",
                f"{delay if delay is not None else rng.uniform(0.5, 1.5):.2f}",
                "--seed",
                str(seed * 100 + number),
            ]
            if role == "asks permission":
                argv.insert(-1, "--ask-permission")
            if role == "fails":
                argv.insert(-1, "--fail")
            prompt = f"Demo task {number}: tidy the code base ({role})."
            started.append(
                self.submit(
                    prompt,
                    "demo",
                    f"{DEMO_LABEL_PREFIX}{number}",
                    agent_cmd=argv,
                    workdir=workdir,
                )
            )
        return started
