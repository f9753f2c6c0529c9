"""A live tail of an agent pane's log file, read by a thread worker."""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path

from textual import work
from textual.message import Message
from textual.widgets import Log
from textual.worker import get_current_worker

POLL_INTERVAL_S = 0.2
INITIAL_LINES = 200


class PaneTail(Log):
    """Follows one file like `tail -f`; `max_lines` bounds memory. The file is
    read in a thread worker and lines come back as messages, so a slow disk or
    a huge log never blocks input."""

    DEFAULT_CSS = """
    PaneTail { background: $surface; border: round $primary-darken-2; }
    """

    class Lines(Message):
        """New lines read from the followed file."""

        def __init__(self, path: Path, lines: list[str]) -> None:
            super().__init__()
            self.path = path
            self.lines = lines

    def __init__(self, *, max_lines: int = 2000, **kwargs: object) -> None:
        super().__init__(max_lines=max_lines, auto_scroll=True, **kwargs)  # type: ignore[arg-type]
        self.path: Path | None = None

    def follow(self, path: Path | None) -> None:
        """Start tailing `path` (None: show that there is no pane log)."""
        if path == self.path and path is not None:
            return
        self.path = path
        self.clear()
        self.border_title = str(path.name) if path else "pane log"
        if path is None:
            self.workers.cancel_group(self, "tail")
            self.write_line("(no pane log for this job yet)")
            return
        self._tail(path)

    @work(thread=True, exclusive=True, group="tail", description="Tailing pane log")
    def _tail(self, path: Path) -> None:
        worker = get_current_worker()
        while not path.exists():
            if worker.is_cancelled:
                return
            time.sleep(POLL_INTERVAL_S)
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            first = list(deque(handle, maxlen=INITIAL_LINES))
            self.post_message(self.Lines(path, [line.rstrip("\n") for line in first]))
            partial = ""
            while not worker.is_cancelled:
                chunk = handle.read()
                if not chunk:
                    time.sleep(POLL_INTERVAL_S)
                    continue
                partial += chunk
                *complete, partial = partial.split("\n")
                if complete:
                    self.post_message(self.Lines(path, complete))

    def on_pane_tail_lines(self, message: Lines) -> None:
        if message.path == self.path:  # ignore lines from a file we stopped following
            self.write_lines(message.lines)
