"""Agent sessions: a tmux session and its record in the registry, kept in step
(created, stopped three ways, resumed, and marked terminated when tmux lost it)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence

from app.agents import adapter_for
from app.agents.env import pane_environment
from app.control import launch
from app.control.context import ControlContext
from app.settings import JOB_ENV
from app.tmux.errors import InvalidStopMode
from app.tmux.names import session_name_for
from registry import states
from registry.errors import IllegalTransition, SessionNotFound
from registry.sessions import Session
from registry.vocabulary import JobStatus, SessionStatus

log = logging.getLogger(__name__)

STOP_TRANSITIONS = {"graceful": "stop", "soft": "soft_stop", "hard": "hard_stop"}
"""`session stop --mode` -> the session state machine's transition (registry/states.py)."""


class SessionControl:
    """Sessions on the context's tmux server; the registry says what is legal first."""

    def __init__(self, context: ControlContext) -> None:
        self.context = context

    def agent_cmd(self, label: str) -> list[str] | None:
        """The agent command recorded by `session create --agent-cmd`, if any."""
        try:
            recorded = self.context.sessions.get(label).agent_cmd
        except SessionNotFound:
            return None
        return launch.split_command(recorded) if recorded else None

    def ensure_record(self, label: str, agent: str, why: str) -> Session:
        """The session record for `label`, made running (created, re-created or resumed)."""
        sessions = self.context.sessions
        try:
            session = sessions.get(label)
        except SessionNotFound:
            session = None
        if session is None or session.state == SessionStatus.TERMINATED:
            return sessions.create(
                label,
                agent,
                tmux_session=session_name_for(label),
                tmux_socket=self.context.driver.socket_name,
                reason=why,
            )
        if session.state != SessionStatus.RUNNING:
            return sessions.resume(label, why)
        return session

    def create(
        self, label: str, agent: str = "demo", *, agent_cmd: str = "", workdir: str | None = None
    ) -> Session:
        """Record a running session and create its tmux session (no agent runs until a submit)."""
        driver = self.context.driver
        sessions = self.context.sessions
        name = session_name_for(label)
        if agent_cmd:
            launch.split_command(agent_cmd)
        driver.check_owner(label)  # another project's session: refused before the record
        try:
            existing: Session | None = sessions.get(label)
        except SessionNotFound:
            existing = None
        vanished = existing is not None and not driver.has_session(label)
        if existing is not None and existing.state != SessionStatus.TERMINATED and vanished:
            self.terminate_vanished(existing)
        session = sessions.create(
            label,
            agent,
            agent_cmd=agent_cmd,
            tmux_session=name,
            workdir=workdir,
            tmux_socket=driver.socket_name,
        )
        driver.ensure_session(label, start_directory=workdir)
        return session

    def reconcile(self) -> list[str]:
        """Mark every recorded, not terminated session whose tmux session is gone; the labels.

        Only sessions of this driver's tmux server are judged: a session started
        under another ORCHESTRATE_TMUX_SOCKET is not "gone" because it is not here.
        """
        driver = self.context.driver
        live = {info.label for info in driver.list_sessions()}
        gone = []
        socket = driver.socket_name
        for session in self.context.sessions.list():
            if session.tmux_socket not in (None, socket):
                continue
            if session.state != SessionStatus.TERMINATED and session.label not in live:
                self.terminate_vanished(session)
                gone.append(session.label)
        return gone

    def terminate_vanished(self, session: Session) -> None:
        """Record that tmux lost the session (a reconcile transition, not a person's stop)."""
        with contextlib.suppress(IllegalTransition):  # another process got there first
            self.context.sessions.set_state(
                session.label, "", "tmux session gone", transition="reconcile"
            )

    def stop(self, label: str, mode: str) -> Session:
        """graceful: cancel its running jobs, ask agents to exit, keep tmux -> stopped;
        soft: registry only, tmux and agents left alone -> archived;
        hard: cancel its running jobs, kill the tmux session -> terminated."""
        if mode not in STOP_TRANSITIONS:
            raise InvalidStopMode(f"stop mode must be graceful, soft or hard, not {mode!r}")
        sessions = self.context.sessions
        registry = self.context.registry
        driver = self.context.driver
        session = sessions.get(label)
        states.next_state(states.SESSION, session.state, STOP_TRANSITIONS[mode], label)
        if mode != "soft":
            driver.check_owner(label)  # before cancelling anything on its behalf
            for job in registry.list(status=JobStatus.RUNNING, agent_session=label):
                with contextlib.suppress(IllegalTransition):
                    registry.cancel(job.job_id, f"session {label} stopped ({mode})")
        keys = adapter_for(session.agent, self.context.settings.state_dir).keys
        result = driver.stop(label, mode, exit_keys=(*keys.interrupt, *keys.exit))
        if result.still_running_panes:
            log.warning(
                "session %s: %d agent pane(s) did not exit after the exit keys: %s",
                label,
                len(result.still_running_panes),
                " ".join(result.still_running_panes),
            )
        if not result.session_existed and mode != "hard":
            self.terminate_vanished(session)
            return sessions.get(label)
        try:
            return sessions.stop(label, mode)
        except IllegalTransition:
            # The kill woke whatever else watches the session (its job's supervisor):
            # a reconcile that saw the tmux session gone may have recorded it first.
            now = sessions.get(label)
            if mode == "hard" and now.state == SessionStatus.TERMINATED:
                return now
            raise

    def resume(self, label: str, resume_cmd: Sequence[str] | None = None) -> Session:
        """stopped|archived -> running; restarts the agent's conversation where there is one.

        An archived session whose tmux session is alive needs nothing in tmux.
        Otherwise the resume command (given, else per agent kind) starts in the
        session, logged to `<state>/logs/sessions/<tmux name>/resume.log`.
        """
        sessions = self.context.sessions
        state_dir = self.context.settings.state_dir
        session = sessions.get(label)
        states.next_state(states.SESSION, session.state, "resume", label)
        driver = self.context.driver
        alive = driver.has_session(label)
        argv = list(resume_cmd) if resume_cmd else launch.session_resume_command(session.agent)
        if not (session.state == SessionStatus.ARCHIVED and alive):
            if argv:
                log_path = state_dir / "logs" / "sessions" / session_name_for(label) / "resume.log"
                env = pane_environment(
                    os.environ,
                    state_dir=state_dir,
                    job_id="",
                    token=None,
                    tmux_socket=driver.socket_name,
                )
                env.pop(JOB_ENV, None)
                driver.resume(label, argv, env, log_path, start_directory=session.workdir)
            else:
                driver.ensure_session(label, start_directory=session.workdir)
        return sessions.resume(label)
