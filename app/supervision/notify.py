"""The person's notify command: run with a job as JSON on stdin when the job starts
waiting on them or ends (`watch --notify-cmd`, ORCHESTRATE_NOTIFY_CMD).

The command is argv words split with shlex, run without a shell, so nothing an
agent writes (a question, a detail) can become shell syntax: it only ever
travels as JSON on stdin. Each change is claimed on the bus first
(registry/needs_you.py), so the control room and the background supervisor,
or two control rooms, announce it once between them. Commands run one at a
time, in the order the changes were seen, on a thread of their own: a slow
webhook never holds up the screen or a supervision pass.
"""

from __future__ import annotations

import queue
import shlex
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.settings import NOTIFY_CMD_ENV, SettingsError
from app.terminal.output import dumps
from bus.errors import BusError
from registry.activity import clean_text
from registry.errors import RegistryError
from registry.needs_you import Signal, changes, claim, read_watched, transitions_seen

if TYPE_CHECKING:
    from registry.jobs import Registry

MAX_COMMAND_CHARS = 4096
RUN_TIMEOUT_SEC = 10.0
"""A notify command taking longer is killed (and said so once): the next one waits."""
QUEUE_LIMIT = 1000
"""Signals waiting for the command; past this they are dropped, with a report."""


@dataclass(frozen=True)
class NotifyCommand:
    """A checked notify command: its argv, with the executable resolved on PATH."""

    argv: tuple[str, ...]
    timeout_sec: float = RUN_TIMEOUT_SEC

    @classmethod
    def parse(cls, text: str, *, origin: str = "--notify-cmd") -> NotifyCommand | None:
        """``text`` split as a shell would split words (no shell runs it); None when it
        is empty. SettingsError (one line naming ``origin``) for quotes left open, a
        control character, or a program that is not on PATH."""
        text = text.strip()
        if not text:
            return None
        if len(text) > MAX_COMMAND_CHARS:
            raise SettingsError(f"{origin} is longer than {MAX_COMMAND_CHARS} characters")
        if any(ord(char) < 32 or ord(char) == 127 for char in text):
            raise SettingsError(f"{origin} must be one line of text (it holds a control character)")
        try:
            words = shlex.split(text)
        except ValueError as error:
            raise SettingsError(
                f"{origin}: cannot split {text[:60]!r} into words: {error}"
            ) from None
        if not words:
            return None
        program = shutil.which(words[0])
        if program is None:
            raise SettingsError(
                f"{origin}: {words[0][:60]!r} is not a program on PATH (or not executable)"
            )
        return cls((program, *words[1:]))

    @classmethod
    def from_env(cls, text: str) -> NotifyCommand | None:
        return cls.parse(text, origin=NOTIFY_CMD_ENV)

    def run(self, signal: Signal) -> str | None:
        """Run once with the signal's job on stdin; None if it went well, else why not."""
        data = dumps(signal.payload()).encode("utf-8")
        try:
            done = subprocess.run(
                self.argv,
                input=data,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=self.timeout_sec,
                check=False,
                close_fds=True,
            )
        except subprocess.TimeoutExpired:
            return f"notify command did not finish within {self.timeout_sec:.0f} s"
        except OSError as error:
            return f"notify command could not start: {error}"
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            last = clean_text(said[-1], 200) if said else ""
            return f"notify command exited with status {done.returncode}" + (
                f": {last}" if last else ""
            )
        return None


class Notifier:
    """Claims each signal, then runs the command for it, on one background thread."""

    def __init__(
        self,
        command: NotifyCommand,
        claim: Callable[[Signal], bool],
        report: Callable[[str], None],
    ) -> None:
        """``claim`` returns False when another process announced the change already;
        ``report`` gets one line per problem (from the notifier's thread)."""
        self.command = command
        self.claim = claim
        self.report = report
        self.runs = 0  # commands run so far (tests and benches read it)
        self._queue: queue.Queue[Signal | None] = queue.Queue(maxsize=QUEUE_LIMIT)
        self._thread: threading.Thread | None = None
        self._last_problem = ""

    def send(self, signals: Iterable[Signal]) -> None:
        """Queue ``signals`` (never blocks the caller)."""
        for signal in signals:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="notify", daemon=True)
                self._thread.start()
            try:
                self._queue.put_nowait(signal)
            except queue.Full:
                self._say(f"notify: {QUEUE_LIMIT} announcements behind; dropped one")

    def close(self, timeout: float = 2.0) -> None:
        """Let queued announcements go out (up to ``timeout``), then stop the thread."""
        if self._thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        while (signal := self._queue.get()) is not None:
            try:
                claimed = self.claim(signal)
            except (BusError, RegistryError, sqlite3.Error) as error:  # announce, not miss it
                self._say(f"notify: could not record the announcement ({error}); sending anyway")
                claimed = True
            if not claimed:
                continue
            problem = self.command.run(signal)
            self.runs += 1
            if problem is not None:
                self._say(problem)
            else:
                self._last_problem = ""

    def _say(self, problem: str) -> None:
        """One report per distinct problem, not one per announcement."""
        if problem != self._last_problem:
            self._last_problem = problem
            self.report(problem)


class RegistryWatch:
    """The background supervisor's eyes for signals: on each pass, the live jobs and
    those whose status moved since the last pass, turned into signals for a Notifier.

    It starts from the status changes after it was made (what ended before it
    started was announced by whoever watched then, or is old news); a job that
    waits already is announced unless someone claimed that wait before."""

    def __init__(self, registry: Registry, notifier: Notifier) -> None:
        self.registry = registry
        self.notifier = notifier
        self._after: int | None = None
        self._marks: dict[str, str] = {}

    def check(self) -> None:
        """One look (called after each supervision pass, on the supervisor's thread)."""
        conn = self.registry.db.conn
        if self._after is None:
            self._after = transitions_seen(conn)
        self._after, rows = read_watched(conn, self._after)
        marks, signals = changes(self._marks, rows)
        present = {row.job_id for row in rows}  # ended and quiet since: nothing to compare
        self._marks = {job_id: mark for job_id, mark in marks.items() if job_id in present}
        self.notifier.send(signals)


def background_watch(
    registry: Registry, text: str, report: Callable[[str], None]
) -> RegistryWatch | None:
    """The supervisor's RegistryWatch for ORCHESTRATE_NOTIFY_CMD ``text``; None when it
    is empty, or unusable (said once through ``report``: a supervisor never dies of it)."""
    try:
        command = NotifyCommand.from_env(text)
    except SettingsError as error:
        report(f"notify command off: {error}")
        return None
    if command is None:
        return None
    notifier = Notifier(
        command, lambda signal: claim(registry.bus, signal, by="supervisor"), report
    )
    return RegistryWatch(registry, notifier)
