"""The tmux driver: agent sessions, agent panes, stop modes, answers, through libtmux."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from libtmux import exc as libtmux_exc
from libtmux.constants import PaneDirection
from libtmux.session import Session

from app.settings import HOME_ENV, JOB_ENV, JOB_TOKEN_ENV
from app.tmux.errors import (
    InvalidStopMode,
    SessionNotFound,
    SessionOwnedElsewhere,
    TmuxCommandFailed,
    TmuxError,
)
from app.tmux.format_safe import argument_literal, format_literal
from app.tmux.models import ControlRoom, PaneStatus, SessionInfo, StopResult
from app.tmux.names import is_safe_label, label_for, session_name_for
from app.tmux.panes import EXIT_FILE_OPTION, JOB_OPTION, OWNER_OPTION, PaneControl, end_groups

StopMode = Literal["graceful", "soft", "hard"]
STOP_MODES: tuple[str, ...] = ("graceful", "soft", "hard")

# Detached sessions get this size so agent lines are not wrapped at 80 columns.
SESSION_WIDTH = 200
SESSION_HEIGHT = 50
CONTROL_ROOM_LABEL = "control-room"
SERVER_SECRETS = (JOB_TOKEN_ENV, "MQTT_PASSWORD", JOB_ENV)
"""Never in tmux's global environment: each pane gets its own job's token, no other."""
_JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class TmuxDriver(PaneControl):
    """Drives one tmux server, selected by socket name, on behalf of orchestrate.

    Every method names its target by label or pane id; nothing ever falls back
    to "the current pane", so keys never land in a pane that was not asked for.
    Reading and typing into one pane by id comes from `PaneControl` (panes.py).
    """

    def attach_hint(self, label: str) -> str:
        """The command a person types to look at a session."""
        target = shlex.quote(f"={session_name_for(label)}")
        return f"tmux -L {shlex.quote(self.socket_name)} attach -t {target}"

    # -- sessions -----------------------------------------------------------

    def _session(self, label: str) -> Session | None:
        if not is_safe_label(label):  # no tmux session can have been made for it
            return None
        name = session_name_for(label)
        if not self.server_running():
            return None
        found = self.server.sessions.get(session_name=name, default=None)
        return found if isinstance(found, Session) else None

    def has_session(self, label: str) -> bool:
        """True if the tmux session for `label` exists."""
        return self._session(label) is not None

    def check_owner(self, label: str) -> None:
        """SessionOwnedElsewhere if `label`'s tmux session was made for another state
        dir: two projects on one tmux server would otherwise share (and stop, and
        kill) each other's agents under a common label such as `tmux:claude`.
        InvalidLabel for a label that cannot name a tmux session."""
        session_name_for(label)
        session = self._session(label)
        if session is not None:
            self._claim(session, label, adopt=False)

    def _claim(self, session: Session, label: str, *, adopt: bool = True) -> None:
        """Refuse a session another state dir owns; with `adopt`, mark an unmarked one
        (made by an older release, or just now) as this driver's."""
        if self.owner is None or label == CONTROL_ROOM_LABEL:  # the split only shows
            return
        shown = session.cmd("show-options", "-qv", OWNER_OPTION)
        current = " ".join(getattr(shown, "stdout", []) or []).strip()
        if current and current != self.owner:
            raise SessionOwnedElsewhere(
                f"tmux session {session_name_for(label)!r} on socket {self.socket_name!r} "
                f"belongs to the registry in {current}: use another label, or give each "
                "project its own ORCHESTRATE_TMUX_SOCKET"
            )
        if not current and adopt:
            owner = argument_literal(self.owner)
            self._check(session.cmd("set-option", OWNER_OPTION, owner), "set-option")

    def ensure_session(self, label: str, start_directory: str | Path | None = None) -> str:
        """Create the tmux session for `label`, or reuse it; returns its session id."""
        existing = self._session(label)
        if existing is not None:
            self._claim(existing, label)
            return str(existing.session_id)
        try:
            if self.server_running():
                session = self.server.new_session(
                    session_name=session_name_for(label),
                    window_name="home",
                    start_directory=_directory(start_directory),
                    x=SESSION_WIDTH,
                    y=SESSION_HEIGHT,
                )
            else:
                session = self._start_server(label, start_directory)
            self._forget_secrets()
        except libtmux_exc.TmuxSessionExists:  # raced with another creator
            again = self._session(label)
            if again is None:
                raise
            self._claim(again, label)
            return str(again.session_id)
        except libtmux_exc.LibTmuxException as error:
            raise TmuxCommandFailed(f"cannot create tmux session for {label!r}: {error}") from error
        # An agent's OSC 52 would otherwise reach the clipboard of whoever attaches, and
        # its DCS tmux; passthrough (if a tmux.conf allows it) their terminal itself.
        self._check(self.server.cmd("set-option", "-s", "set-clipboard", "off"), "set-option")
        self.server.cmd("set-option", "-gw", "allow-passthrough", "off")  # unknown before 3.3
        self._claim(session, label)
        return str(session.session_id)

    def _start_server(self, label: str, start_directory: str | Path | None) -> Session:
        """Start the tmux server with its first session, from an environment without
        secrets: tmux keeps the starting client's environment as its global one, which
        every pane inherits (a job token or the broker password would reach them all)."""
        argv = ["tmux", "-L", self.socket_name, "new-session", "-d", "-P", "-F",
                "#{session_id}", "-s", format_literal(session_name_for(label)), "-n", "home",
                "-x", str(SESSION_WIDTH), "-y", str(SESSION_HEIGHT)]  # fmt: skip
        if start_directory:
            argv += ["-c", format_literal(str(start_directory))]
        env = {name: value for name, value in os.environ.items() if name not in SERVER_SECRETS}
        result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            if "duplicate session" in result.stderr:
                raise libtmux_exc.TmuxSessionExists(result.stderr.strip())
            raise libtmux_exc.LibTmuxException(result.stderr.strip())
        found = self.server.sessions.get(session_id=result.stdout.strip(), default=None)
        if not isinstance(found, Session):
            raise libtmux_exc.LibTmuxException("the new tmux session vanished")
        return found

    def _forget_secrets(self) -> None:
        """Drop secrets from tmux's global environment (a server someone else started)."""
        for name in SERVER_SECRETS:
            self.server.cmd("set-environment", "-g", "-u", name)

    def list_sessions(self) -> list[SessionInfo]:
        """Every live session on this server, labelled (empty when no server runs).

        One tmux call for every session's panes (not one per session): the
        supervisor asks on each pass, and each call is a process."""
        fields = "\t".join(("#{session_id}", "#{pane_id}", "#{session_name}"))
        result = self.server.cmd("list-panes", "-a", "-F", fields)
        if result.returncode != 0:
            self.server_running()  # raises if the server is there but unusable
            return []
        found: dict[str, tuple[str, list[str]]] = {}
        for line in result.stdout:
            parts = line.split("\t", 2)  # the name last: it may hold a tab
            if len(parts) == 3:
                found.setdefault(parts[0], (parts[2], []))[1].append(parts[1])
        return [
            SessionInfo(
                label=label_for(name),
                session_name=name,
                session_id=session_id,
                pane_ids=tuple(panes),
            )
            for session_id, (name, panes) in found.items()
        ]

    def kill_session(self, label: str) -> bool:
        """Kill the tmux session for `label`; False if there was none."""
        session = self._session(label)
        if session is None:
            return False
        self._claim(session, label, adopt=False)
        self._kill(session)
        return True

    def _kill(self, session: Session) -> None:
        """Kill a session and what ran in its panes (an agent may ignore the hangup)."""
        groups = self.pane_groups(str(pane.pane_id) for pane in session.panes)
        session.kill()
        end_groups(groups)

    def agent_panes(self, label: str) -> list[str]:
        """Pane ids in the session for `label` that run an orchestrate agent."""
        session = self._session(label)
        if session is None:
            raise SessionNotFound(f"no tmux session for agent-session {label!r}")
        statuses = self.pane_statuses(str(pane.pane_id) for pane in session.panes)
        return [pane_id for pane_id, status in statuses.items() if status.job_id]

    def pane_for_job(self, job_id: str) -> str | None:
        """The pane that runs `job_id` (newest first), or None."""
        if not self.server_running():
            return None
        result = self.server.cmd("list-panes", "-a", "-F", f"#{{pane_id}} #{{{JOB_OPTION}}}")
        matches = [
            line.split(" ", 1)[0] for line in result.stdout if line.split(" ", 1)[1:] == [job_id]
        ]
        return matches[-1] if matches else None

    # -- agent panes ----------------------------------------------------------

    def start_agent_pane(
        self,
        label: str,
        job_id: str,
        command_argv: Sequence[str],
        env: Mapping[str, str],
        prompt_file: str | Path,
        log_path: str | Path,
        header_text: str = "",
        *,
        start_directory: str | Path | None = None,
        deliver: str | None = None,
        agent: str = "generic",
        paste_text: str | Path | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """Start an agent in a new window of `label`'s session; returns its pane id.

        The pane runs orchestrate's pane runner (app/agents/pane_runner.py), never a
        shell with the prompt in it: the prompt goes as one argv word where
        `command_argv` holds "{prompt}", as the file's path where it holds
        "{prompt_file}"; `deliver="paste"` pastes it once the agent is ready.
        The pane is piped to `log_path` before the agent starts, so no output is
        lost and the log outlives the pane; `remain-on-exit` keeps a crashed
        agent inspectable. `env` (laid over the pane's own, secrets removed)
        must hold ORCHESTRATE_HOME; ORCHESTRATE_JOB is set to `job_id`.
        """
        if not _JOB_ID.fullmatch(job_id):
            raise TmuxCommandFailed(f"job id {job_id!a} must be letters, digits, - or _")
        if HOME_ENV not in env:
            raise TmuxCommandFailed("agent environment lacks ORCHESTRATE_HOME")
        pane_env = {key: str(value) for key, value in env.items()}
        pane_env[HOME_ENV] = str(Path(pane_env[HOME_ENV]).resolve())
        pane_env[JOB_ENV] = job_id
        return self._spawn(
            label,
            f"job-{job_id}",
            command_argv,
            pane_env,
            Path(log_path),
            header_text,
            prompt=Path(prompt_file).resolve(),
            job_id=job_id,
            start_directory=start_directory,
            deliver=deliver,
            agent=agent,
            paste_text=Path(paste_text).resolve() if paste_text else None,
            extra=extra,
        )

    def resume(
        self,
        label: str,
        resume_argv: Sequence[str],
        env: Mapping[str, str],
        log_path: str | Path,
        header_text: str = "",
        *,
        start_directory: str | Path | None = None,
    ) -> str:
        """Start `resume_argv` (e.g. `claude --continue`) in the session; returns the pane id.

        Creates the session if a hard stop removed it. The command keeps the
        terminal as stdin (a resumed agent is interactive); like an agent pane
        it is piped to `log_path` from its first byte and stays inspectable
        after exit.
        """
        return self._spawn(
            label,
            "resume",
            resume_argv,
            {key: str(value) for key, value in env.items()},
            Path(log_path),
            header_text,
            prompt=None,
            job_id=None,
            start_directory=start_directory,
        )

    def _spawn(
        self,
        label: str,
        window_name: str,
        command_argv: Sequence[str],
        env: dict[str, str],
        log_path: Path,
        header_text: str,
        *,
        prompt: Path | None,
        job_id: str | None,
        start_directory: str | Path | None,
        deliver: str | None = None,
        agent: str = "generic",
        paste_text: Path | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """Open a window whose pane runner waits until pipe-pane is set, then runs argv."""
        from app.agents.pane_runner import LaunchSpec, delivery_of, window_command

        if not command_argv:
            raise TmuxCommandFailed("agent command is empty")
        log = log_path.resolve()
        log.parent.mkdir(parents=True, exist_ok=True)
        # created 0600 (prompts and output may be private); an existing log (a resumed
        # job's) keeps its mtime: a supervisor pass reads a newer one as this pane's output
        os.close(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        stem = "launch" if job_id else "resume"
        exit_file = log.parent / f"{stem}.exit_status"
        exit_file.unlink(missing_ok=True)
        spec = LaunchSpec(
            job_id=job_id or "",
            agent=agent,
            state_dir=env.get(HOME_ENV, ""),
            argv=list(command_argv),
            env=env,
            prompt_file=str(prompt) if prompt else "",
            deliver=deliver or delivery_of(command_argv),
            header=header_text,
            channel=f"orchestrate-{uuid.uuid4().hex}",
            exit_file=str(exit_file),
            paste_text_file=str(paste_text) if paste_text else "",
            extra=dict(extra or {}),
        )
        spec_path = spec.write(log.parent / f"{stem}.json")
        self.ensure_session(label)
        session = self._session(label)
        if session is None:
            raise SessionNotFound(f"tmux session for {label!r} vanished while starting")
        try:
            window = session.new_window(
                window_name=format_literal(window_name),
                attach=False,
                start_directory=_directory(start_directory),
                window_shell=argument_literal(window_command(spec_path)),
            )
        except libtmux_exc.LibTmuxException as error:
            raise TmuxCommandFailed(f"cannot open agent window: {error}") from error
        pane = window.active_pane
        if pane is None:
            raise TmuxCommandFailed("new agent window has no pane")
        window.set_option("remain-on-exit", "on")
        if job_id:
            self._check(pane.cmd("set-option", "-p", JOB_OPTION, job_id), "set-option")
        exit_path = argument_literal(str(exit_file))
        self._check(pane.cmd("set-option", "-p", EXIT_FILE_OPTION, exit_path), "set-option")
        # pipe-pane expands its command as a format: a state dir holding "#(...)" would run
        pipe = format_literal(f"cat >> {shlex.quote(str(log))}")
        self._check(pane.cmd("pipe-pane", "-o", pipe), "pipe-pane")
        # The pane runner waits on this channel: the command starts only now,
        # after pipe-pane and remain-on-exit are in place.
        self._check(self.server.cmd("wait-for", "-S", spec.channel), "wait-for")
        return str(pane.pane_id)

    # -- stopping -------------------------------------------------------------

    def stop(
        self,
        label: str,
        mode: str,
        *,
        exit_keys: Sequence[str] = ("C-c",),
        timeout: float = 10.0,
        poll_interval: float = 0.1,
    ) -> StopResult:
        """Stop `label`'s agents: graceful (exit keys, wait), soft (no-op), hard (kill session).

        graceful sends `exit_keys` (tmux key names, e.g. "C-c" or "/exit" then
        "Enter") to every live agent pane and waits up to `timeout` for them to
        exit; the tmux session stays so the conversation can be resumed.
        """
        if mode not in STOP_MODES:
            raise InvalidStopMode(f"stop mode must be graceful, soft or hard, not {mode!r}")
        session = self._session(label)
        if session is None:
            return StopResult(label=label, mode=mode, session_existed=False)
        self._claim(session, label, adopt=False)
        if mode == "soft":
            return StopResult(label=label, mode=mode, session_existed=True)
        if mode == "hard":
            self._kill(session)
            return StopResult(label=label, mode=mode, session_existed=True, session_killed=True)
        live = [pane_id for pane_id in self.agent_panes(label) if self.pane_alive(pane_id)]
        for pane_id in live:
            pane = self._pane(pane_id)
            for key in exit_keys:
                self._check(pane.cmd("send-keys", key), "send-keys")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self.pane_alive(p) for p in live):
            time.sleep(poll_interval)
        exited = tuple(p for p in live if not self.pane_alive(p))
        running = tuple(p for p in live if self.pane_alive(p))
        return StopResult(
            label=label,
            mode=mode,
            session_existed=True,
            exited_panes=exited,
            still_running_panes=running,
        )

    # -- control room ---------------------------------------------------------

    def control_room_split(
        self,
        job_id: str,
        log_path: str | Path,
        follow_cmd_argv: Sequence[str],
        session_label: str = CONTROL_ROOM_LABEL,
    ) -> ControlRoom:
        """Open window `w:<job>`: `tail -F` of the pane log (70 %) over the follow command (30 %).

        Reuses the window when it is already open.
        """
        if not _JOB_ID.fullmatch(job_id):
            raise TmuxCommandFailed(f"job id {job_id!a} must be letters, digits, - or _")
        window_name = f"w:{job_id}"
        self.ensure_session(session_label)
        session = self._session(session_label)
        if session is None:
            raise SessionNotFound(f"tmux session for {session_label!r} vanished")
        for window in session.windows:
            if window.window_name == window_name and len(window.panes) == 2:
                top, bottom = sorted(window.panes, key=lambda p: int(p.pane_top or 0))
                return ControlRoom(
                    window_id=str(window.window_id),
                    log_pane_id=str(top.pane_id),
                    follow_pane_id=str(bottom.pane_id),
                    created=False,
                )
        log = Path(log_path).resolve()
        window = session.new_window(
            window_name=format_literal(window_name),
            attach=False,
            window_shell=argument_literal(f"exec tail -F {shlex.quote(str(log))}"),
        )
        top_pane = window.active_pane
        if top_pane is None:
            raise TmuxCommandFailed("control-room window has no pane")
        bottom_pane = top_pane.split(
            direction=PaneDirection.Below,
            size="30%",
            shell=argument_literal(shlex.join(["exec", *follow_cmd_argv]))
            if follow_cmd_argv
            else None,
        )
        return ControlRoom(
            window_id=str(window.window_id),
            log_pane_id=str(top_pane.pane_id),
            follow_pane_id=str(bottom_pane.pane_id),
        )


def _directory(path: str | Path | None) -> str | None:
    """A start directory as tmux's `-c` needs it: tmux expands it as a format."""
    return format_literal(str(path)) if path else None


__all__ = [
    "STOP_MODES",
    "ControlRoom",
    "PaneStatus",
    "SessionInfo",
    "StopMode",
    "StopResult",
    "TmuxDriver",
    "TmuxError",
]
