"""Tmux commands on one pane named by id: status, capture, typing, kill.

They live apart from the driver because none of them needs a session: each
command carries `-t %N` for exactly the pane asked for, so nothing here can fall
back to "the current pane". `TmuxDriver` builds sessions and job windows on top.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from libtmux.pane import Pane
from libtmux.server import Server

from app.tmux.errors import (
    AnswerNotReceived,
    PaneDead,
    PaneNotFound,
    TmuxCommandFailed,
    TmuxNotInstalled,
    TmuxServerUnreachable,
)
from app.tmux.format_safe import argument_literal
from app.tmux.models import PaneStatus
from app.tmux.names import default_socket_name

# A pane option naming the job an agent pane runs, so panes can be found by job.
JOB_OPTION = "@orchestrate_job"
# A session-level user option: the state dir whose registry made the session.
OWNER_OPTION = "@orchestrate_home"
# A pane option naming the file the launch script writes the agent's exit status to:
# tmux 3.3 sometimes leaves a fast-exiting child unreaped (pane_dead=1 but no
# pane_dead_status) until another child exits, so the script records it too.
EXIT_FILE_OPTION = "@orchestrate_exit_file"
ANSWERS = ("y", "n", "yes", "no")
# stderr of a tmux client when no server listens (yet, or any more)
_NOT_RUNNING = ("no server running", "No such file or directory", "server exited unexpectedly")
_PANE_ID = re.compile(r"%[0-9]+")


def read_exit_file(path: Path) -> int | None:
    """The status the pane runner recorded, or None if it has not (yet) written one."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.lstrip("-").isdigit() else None


def end_groups(groups: Iterable[int], grace_sec: float = 2.0) -> None:
    """SIGTERM each process group, and SIGKILL what is left of them after ``grace_sec``."""
    alive = []
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGTERM)
            alive.append(group)
    deadline = time.monotonic() + grace_sec
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [group for group in alive if _group_alive(group)]
    for group in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class PaneControl:
    """One tmux server, selected by socket name, driven pane by pane.

    The base of `TmuxDriver`; on its own it is enough to read and type into
    panes whose ids are already known (the liveness sampler needs no more).
    """

    def __init__(self, socket_name: str | None = None, *, owner: str | None = None) -> None:
        """``owner``: the state dir this driver acts for; sessions another state dir
        made on the same tmux server are then refused (None: no such check)."""
        if shutil.which("tmux") is None:
            raise TmuxNotInstalled("tmux is not installed (no `tmux` on PATH)")
        self.owner = owner
        self.socket_name = socket_name or default_socket_name()
        self.server = Server(socket_name=self.socket_name)

    # -- server -------------------------------------------------------------

    def server_running(self) -> bool:
        """True if a server listens on the socket; raises if the socket cannot be used.

        "Not running" is normal (it starts with the first session); any other
        failure to connect (permissions, a stale socket) is an error.
        """
        result = self.server.cmd("list-sessions")
        if result.returncode == 0:
            return True
        stderr = " ".join(result.stderr)
        if any(marker in stderr for marker in _NOT_RUNNING):
            return False
        raise TmuxServerUnreachable(
            f"tmux server on socket {self.socket_name!r} is unreachable: {stderr}"
        )

    # -- pane inspection ----------------------------------------------------

    def pane_statuses(self, pane_ids: Iterable[str]) -> dict[str, PaneStatus]:
        """Read many panes with one tmux call (never raises for a gone pane or server)."""
        wanted = list(pane_ids)
        fields = [
            "#{pane_id}",
            "#{pane_dead}",
            "#{pane_dead_status}",
            "#{pane_dead_signal}",
            "#{pane_current_command}",
            f"#{{{JOB_OPTION}}}",
            f"#{{{EXIT_FILE_OPTION}}}",
        ]
        result = self.server.cmd("list-panes", "-a", "-F", "\t".join(fields))
        if result.returncode != 0:
            self.server_running()  # raises if the server is there but unusable
        found: dict[str, PaneStatus] = {}
        for line in result.stdout if result.returncode == 0 else []:
            parts = line.split("\t")
            if len(parts) != len(fields) or parts[0] not in wanted:
                continue
            dead = parts[1] == "1"
            status = int(parts[2]) if parts[2].lstrip("-").isdigit() else None
            signal = int(parts[3]) if parts[3].isdigit() else None
            if dead and status is None and signal is None and parts[6]:
                status = read_exit_file(Path(parts[6]))
            found[parts[0]] = PaneStatus(
                pane_id=parts[0],
                exists=True,
                dead=dead,
                dead_status=status if dead else None,
                dead_signal=signal if dead else None,
                current_command=parts[4] or None,
                job_id=parts[5] or None,
            )
        gone = PaneStatus  # a pane tmux does not list is gone: report it dead
        return {p: found.get(p) or gone(pane_id=p, exists=False, dead=True) for p in wanted}

    def pane_status(self, pane_id: str) -> PaneStatus:
        """One read of a pane's existence, exit state and job (never raises for a gone pane)."""
        return self.pane_statuses([pane_id])[pane_id]

    def pane_alive(self, pane_id: str) -> bool:
        """True if the pane exists and its process still runs."""
        status = self.pane_status(pane_id)
        return status.exists and not status.dead

    def pane_dead_status(self, pane_id: str) -> int | None:
        """The exit status of a dead pane's process; None while it runs or if the pane is gone."""
        return self.pane_status(pane_id).dead_status

    def capture(self, pane_id: str, lines: int = 50) -> list[str]:
        """The last `lines` lines of the pane (history included), trailing blanks dropped."""
        result = self._pane(pane_id).cmd("capture-pane", "-p", "-S", str(-max(lines, 1)))
        if result.returncode != 0:
            raise PaneNotFound(f"cannot read pane {pane_id}: {' '.join(result.stderr)}")
        text = [str(line) for line in result.stdout]
        while text and not text[-1].strip():
            text.pop()
        if text and text[-1].startswith("Pane is dead ("):  # remain-on-exit banner
            text.pop()
            while text and not text[-1].strip():
                text.pop()
        return text[-lines:]

    def content_hash(self, pane_id: str, lines: int = 200) -> str:
        """A digest of what the pane shows, to tell whether its output moved."""
        joined = "\n".join(self.capture(pane_id, lines))
        return hashlib.sha256(joined.encode("utf-8", "replace")).hexdigest()

    def kill_pane(self, pane_id: str) -> None:
        """Kill one pane and what ran in it. tmux's hangup is not enough: Gemini CLI
        (after a tool dialog) and Aider ignore it and live on without a terminal, so
        the pane's process group is sent SIGTERM, then SIGKILL (see `end_groups`)."""
        groups = self.pane_groups([pane_id])
        result = self._pane(pane_id).cmd("kill-pane")
        if result.returncode != 0:
            raise PaneNotFound(f"cannot kill pane {pane_id}: {' '.join(result.stderr)}")
        end_groups(groups)

    def pane_groups(self, pane_ids: Iterable[str] | None = None) -> list[int]:
        """The process ids of panes (each leads its pane's process group): of `pane_ids`,
        or of every pane on the server."""
        result = self.server.cmd("list-panes", "-a", "-F", "#{pane_id} #{pane_pid}")
        wanted = None if pane_ids is None else set(pane_ids)
        groups = []
        for line in result.stdout if result.returncode == 0 else []:
            pane_id, _, pid = line.partition(" ")
            if (wanted is None or pane_id in wanted) and pid.isdigit():
                groups.append(int(pid))
        return groups

    # -- typing into panes ----------------------------------------------------

    def send_keys(self, pane_id: str, text: str, enter: bool = True) -> None:
        """Type `text` literally (no key names, no shell) into exactly `pane_id`."""
        pane = self._live_pane(pane_id)
        if text:
            # a trailing ";" would end the tmux command (and be lost) without the escape
            self._check(pane.cmd("send-keys", "-l", argument_literal(text)), "send-keys")
        if enter:
            self._check(pane.cmd("send-keys", "Enter"), "send-keys")

    def send_key_names(self, pane_id: str, keys: Sequence[str], *, seen_live: bool = False) -> None:
        """Send tmux key names (``1``, ``Escape``, ``C-c``, ``Enter``) to exactly `pane_id`,
        in one tmux command so nothing can come between them. Never agent text: a
        name tmux does not know is typed as its characters. ``seen_live``: the caller
        has just read the pane's screen and the dialog on it (an answer by meaning), so
        the liveness check's tmux call is spared (it doubled each key's cost)."""
        pane = self._pane(pane_id) if seen_live else self._live_pane(pane_id)
        if keys:
            self._check(pane.cmd("send-keys", *keys), "send-keys")

    def paste_text(self, pane_id: str, text: str, *, enter_after: float = 0.4) -> None:
        """Put `text` in the pane as a bracketed paste (tmux's paste buffer, never
        send-keys of raw text), wait, then press Enter: Codex and Gemini take an Enter
        that arrives in the same burst as the paste as a newline."""
        pane = self._live_pane(pane_id)
        buffer = f"orchestrate-{uuid.uuid4().hex[:12]}"
        # From a private file, not argv: the text may be long, and argv is public.
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt") as handle:
            handle.write(text.rstrip("\n"))  # the Enter below submits it, once
            handle.flush()
            self._check(self.server.cmd("load-buffer", "-b", buffer, handle.name), "load-buffer")
        self._check(pane.cmd("paste-buffer", "-p", "-d", "-b", buffer), "paste-buffer")
        time.sleep(enter_after)
        self._check(pane.cmd("send-keys", "Enter"), "send-keys")

    def send_answer(
        self, pane_id: str, answer: str, timeout: float = 3.0, poll_interval: float = 0.05
    ) -> None:
        """Answer a y/n prompt and confirm the pane reacted; one retry, then AnswerNotReceived."""
        if answer.lower() not in ANSWERS:
            raise TmuxCommandFailed(f"answer must be one of {', '.join(ANSWERS)}, not {answer!r}")
        for _attempt in range(2):
            before = self.content_hash(pane_id)
            self.send_keys(pane_id, answer, enter=True)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.content_hash(pane_id) != before:
                    return
                if not self.pane_alive(pane_id):
                    break
                time.sleep(poll_interval)
        raise AnswerNotReceived(f"pane {pane_id} did not react to the answer {answer!r}")

    # -- helpers ---------------------------------------------------------------

    def _pane(self, pane_id: str) -> Pane:
        """A handle on exactly `pane_id`; every command through it carries `-t pane_id`."""
        if not _PANE_ID.fullmatch(pane_id):
            raise PaneNotFound(f"{pane_id!r} is not a tmux pane id (like %3)")
        return Pane(server=self.server, pane_id=pane_id)

    def _live_pane(self, pane_id: str) -> Pane:
        pane = self._pane(pane_id)
        status = self.pane_status(pane_id)
        if not status.exists:
            raise PaneNotFound(f"no pane {pane_id} on tmux server {self.socket_name!r}")
        if status.dead:
            raise PaneDead(f"pane {pane_id} has exited; nothing can be typed into it")
        return pane

    @staticmethod
    def _check(result: object, what: str) -> None:
        stderr = getattr(result, "stderr", None)
        if stderr:
            raise TmuxCommandFailed(f"tmux {what} failed: {' '.join(stderr)}")
