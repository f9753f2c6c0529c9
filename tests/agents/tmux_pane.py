"""A real agent in a pane of a private tmux server: start it, read its screen, type into it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.polling import poll_until

REAP_WAIT_S = 3.0
"""How long the agent gets to exit after each step of _reap."""

PASTE_SETTLE_S = 0.4
"""Codex and Gemini take an Enter in the same burst as a paste for a newline: wait first."""


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap(group: int) -> None:
    """Make sure the agent is gone with its pane: Gemini CLI outlives the pty's hangup
    once it has shown a tool dialog (seen alive 25 min later, 250 MB each) and takes a
    second or more over SIGTERM. So SIGTERM its group at once, SIGKILL if that fails."""
    for signal_to_send in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, signal_to_send)
        except ProcessLookupError:
            return
        try:
            poll_until(lambda: not _group_alive(group), REAP_WAIT_S, "the agent to exit")
            return
        except AssertionError:
            continue


class AgentPane:
    """One pane running one command on its own tmux socket (``tmux -L``); leaving the
    ``with`` block kills that server.

    The first client starts the server, so the server's (and the pane's) environment
    is exactly ``env``: nothing of the test runner's own environment leaks in.
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        width: int = 160,
        height: int = 50,
        raw_log: Path | None = None,
    ) -> None:
        self.socket = f"orch_agents_{uuid.uuid4().hex[:10]}"
        self._env = dict(env)
        self._argv = list(argv)
        self._cwd = cwd
        self._size = (width, height)
        self.raw_log = raw_log
        self.started_at = 0.0

    def start(self) -> AgentPane:
        """Start the server and the command in its one pane (``with pane.start():``)."""
        width, height = self._size
        self.started_at = time.monotonic()
        self.tmux(
            "new-session", "-d", "-s", "agent", "-x", str(width), "-y", str(height),
            "-c", str(self._cwd), "--", *self._argv,
        )  # fmt: skip
        self.tmux("set-option", "-t", "agent", "remain-on-exit", "on")
        if self.raw_log is not None:
            # the pane's bytes as the agent wrote them (escape sequences included)
            self.tmux("pipe-pane", "-t", "agent", "-o", f"cat >> '{self.raw_log}'")
        return self

    def __enter__(self) -> AgentPane:
        return self

    def __exit__(self, *exc_info: object) -> None:
        agent_group = self._pane_pid()
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=self._env
        )
        base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
        (base / f"tmux-{os.getuid()}" / self.socket).unlink(missing_ok=True)
        if agent_group is not None:
            _reap(agent_group)

    def _pane_pid(self) -> int | None:
        """The agent's pid, which tmux made the leader of its own process group."""
        try:
            return int(self.tmux("display-message", "-p", "-t", "agent", "#{pane_pid}"))
        except (subprocess.CalledProcessError, ValueError):
            return None

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            env=self._env,
            check=True,
        )
        return done.stdout

    def screen(self) -> str:
        """The visible screen as plain text (no escape sequences)."""
        return self.tmux("capture-pane", "-p", "-t", "agent")

    def screen_ansi(self) -> str:
        """The visible screen with its colours and attributes as SGR sequences."""
        return self.tmux("capture-pane", "-p", "-e", "-t", "agent")

    def title(self) -> str:
        return self.tmux("display-message", "-p", "-t", "agent", "#{pane_title}").rstrip("\n")

    def dead_status(self) -> int | None:
        """The command's exit status once it has exited, else None."""
        out = self.tmux(
            "display-message", "-p", "-t", "agent", "#{pane_dead} #{pane_dead_status}"
        ).split()
        return int(out[1]) if out and out[0] == "1" and len(out) > 1 else None

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        """Wait until TEXT is on screen; return that screen."""
        return self.wait_until(lambda screen: text in screen, timeout, f"{text!r} on screen")

    def wait_until(self, holds: Callable[[str], bool], timeout: float, what: str) -> str:
        """Wait until ``holds(screen)``; return that screen. A timeout shows the last screen."""
        last = [""]

        def seen() -> str | None:
            last[0] = self.screen()
            return last[0] if holds(last[0]) else None

        try:
            return str(poll_until(seen, timeout, what))
        except AssertionError as error:
            raise AssertionError(f"{error}; last screen:\n{last[0]}") from None

    def send_keys(self, *keys: str) -> None:
        """tmux key names (Enter, Escape, C-c) or literal single characters."""
        self.tmux("send-keys", "-t", "agent", *keys)

    def paste(self, text: str, submit: bool = True) -> None:
        """Bracketed paste (as a user's terminal does), then Enter after a pause."""
        buffer = f"agent-{uuid.uuid4().hex[:8]}"
        self.tmux("set-buffer", "-b", buffer, "--", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", buffer, "-t", "agent")
        if submit:
            time.sleep(PASTE_SETTLE_S)  # a fixed wait is the agent's requirement, not a test wait
            self.send_keys("Enter")
