"""The control room's needs-you signals outside its own screen: the terminal bell,
the terminal title ("orchestrate (2 waiting)") and the person's notify command.

Which jobs signal is decided by `registry.needs_you` from the rows each delta
brings; this module only delivers. Bytes reach the terminal through one writer,
`TerminalSignals.write`, over Textual's own driver (as `App.bell` does), and the
title is built here from a count, never from agent text; `terminal_title` also
drops anything unprintable from it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rich.control import Control
from textual.app import App

from app.supervision.notify import Notifier, NotifyCommand
from app.tui.source import JobRow
from registry.needs_you import Signal, Watched, changes, opening, waiting_title

BELL = "\a"
PUSH_TITLE = "\x1b[22;0t"
"""XTWINOPS: save the terminal's title, restored by POP_TITLE when the app exits
(tmux and xterm keep a stack; a terminal without one ignores both)."""
POP_TITLE = "\x1b[23;0t"
MAX_TITLE_CHARS = 80


@dataclass(frozen=True)
class SignalSettings:
    """Which signals the person wants (`watch` flags over ORCHESTRATE_* variables)."""

    bell: bool = True
    title: bool = True
    notify: NotifyCommand | None = None


def terminal_title(text: str) -> str:
    """The escape sequence setting the terminal title to ``text``, with anything
    unprintable dropped (a title can never carry an escape of its own)."""
    clean = "".join(char for char in text if char.isprintable())[:MAX_TITLE_CHARS]
    return str(Control.title(clean))


def watched_row(row: JobRow) -> Watched:
    """A jobs-table row as the signals see it: one that needs a person (a question, a
    block it stopped at, a screen nothing explains) rings, as registry.needs_you's
    `watched` has it for the background watcher."""
    since = row.state_since or row.updated_at
    return Watched(
        job_id=row.job_id,
        status=row.status,
        waiting=row.needs_person,
        since_ms=int(since.timestamp() * 1000),
        agent=row.agent,
        agent_session=row.agent_session,
        question=row.question or (row.progress_detail if row.needs_person else ""),
        detail=dict(row.asked).get("question", "")
        if row.waiting_permission
        else row.progress_detail,
    )


class TerminalSignals:
    """Bell, title and notify command, fed with each delta's rows on the event loop."""

    def __init__(
        self,
        app: App[Any],
        settings: SignalSettings,
        *,
        claim: Callable[[Signal], bool],
        report: Callable[[str], None],
    ) -> None:
        self.app = app
        self.settings = settings
        self.notifier = (
            Notifier(settings.notify, claim, report) if settings.notify is not None else None
        )
        self._marks: dict[str, str] | None = None  # None until the first delta
        self._title = ""
        self.sent: deque[tuple[float, str]] = deque(maxlen=100)
        """(time.time(), what) of the latest writes: a bell or a title (tests, bench)."""

    def write(self, data: str, what: str) -> None:
        """The one way these signals reach the terminal: Textual's driver, as
        `App.bell` writes (nothing when headless, but still recorded)."""
        self.sent.append((time.time(), what))
        driver = self.app._driver
        if driver is not None and not self.app.is_headless:
            driver.write(data)

    def opened(self) -> None:
        if self.settings.title:
            self.write(PUSH_TITLE, "push title")
            self._set_title(0)

    def closed(self) -> None:
        if self.settings.title:
            self.write(POP_TITLE, "pop title")
        if self.notifier is not None:
            self.notifier.close()

    def observe(self, rows: Iterable[JobRow], removed: Iterable[str], waiting: int) -> None:
        """A delta was drawn: ``rows`` changed, ``removed`` are gone, ``waiting`` jobs
        need a person now (JobRow.needs_person). The first delta is the state found on opening: what
        ended before is old news, but a job found waiting rings and is announced (once
        between all watchers: the notifier claims it), whenever its wait began, so it
        no longer depends on whether the wait was recorded before or after that
        first look (registry/needs_you.py `opening`)."""
        seen = [watched_row(row) for row in rows]
        if self._marks is None:
            self._marks, signals = opening(seen)
        else:
            self._marks, signals = changes(self._marks, seen)
        for job_id in removed:
            self._marks.pop(job_id, None)
        if self.settings.bell and any(signal.event == "needs_you" for signal in signals):
            self.write(BELL, "bell")
        if self.settings.title:
            self._set_title(waiting)
        if signals and self.notifier is not None:
            self.notifier.send(signals)

    def _set_title(self, waiting: int) -> None:
        title = waiting_title(waiting)
        if title != self._title:
            self._title = title
            self.write(terminal_title(title), f"title {title}")
