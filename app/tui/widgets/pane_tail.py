"""A live tail of an agent pane's log, drawn through the terminal emulator (text and colours,
never the agent's escape sequences)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rich.text import Text
from textual import work
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from app.terminal.emulator import TerminalEmulator
from app.tui.safe_text import as_text

POLL_INTERVAL_S = 0.1  # at most ten repaints a second, however fast the agent prints
INITIAL_BYTES = 256 * 1024  # of an existing log, replayed to rebuild its screen
# The main screen's live preview follows the cursor from pane to pane: each move replays
# the new pane's log through the emulator (~0.5 ms a line here), so it replays less.
PREVIEW_BYTES = 32 * 1024
READ_BYTES = 16 * 1024  # fed between looks at cancellation: a moved cursor stops a replay
MAX_LINES = 2000
NO_LOG = "(no pane log for this job yet)"


class PaneTail(ScrollView, can_focus=True):
    """Follows one pane log like `tail -f`. The pane's raw byte stream (pipe-pane) is fed
    to a `TerminalEmulator` in a thread worker, and what it shows (scrollback, then the
    screen) comes back as Rich Text lines: the agent's questions to its terminal and its
    title changes never reach the operator's terminal, where they would be answered as
    phantom key presses."""

    DEFAULT_CSS = """
    PaneTail {
        background: $surface; color: $text; overflow: scroll;
        border: round $primary-darken-2;
        &:focus { background-tint: $foreground 5%; }
    }
    """

    class Rendered(Message):
        """What the followed log shows now; a newer one replaces an older one in the queue."""

        def __init__(self, path: Path, lines: list[Text], width: int) -> None:
            super().__init__()
            self.path = path
            self.lines = lines
            self.width = width

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, PaneTail.Rendered) and message.path == self.path

    def __init__(self, *, replay_bytes: int = INITIAL_BYTES, **kwargs: object) -> None:
        """`replay_bytes`: how much of an existing log is replayed to rebuild its screen;
        four times that unread makes it jump ahead (output floods)."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.replay_bytes = replay_bytes
        self.path: Path | None = None
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}

    @property
    def lines(self) -> list[str]:
        """The text shown, one string per line (no styles)."""
        return [line.plain for line in self._lines]

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def follow(self, path: Path | None) -> None:
        """Start tailing `path` (None: show that there is no pane log)."""
        if path == self.path and path is not None:
            return
        self.path = path
        self.border_title = as_text(path.name) if path else "pane log"  # a str is markup
        self._show([], 0)
        if path is None:
            self.workers.cancel_group(self, "tail")
            self._show([Text(NO_LOG, end="")], len(NO_LOG))
            return
        self._tail(path)

    @work(thread=True, exclusive=True, group="tail", description="Tailing pane log")
    def _tail(self, path: Path) -> None:
        worker = get_current_worker()
        while not path.exists():
            if worker.is_cancelled:
                return
            time.sleep(POLL_INTERVAL_S)
        terminal = TerminalEmulator()
        with path.open("rb") as handle:
            while not worker.is_cancelled:
                size = os.fstat(handle.fileno()).st_size
                skip_ahead = 4 * self.replay_bytes
                if size < handle.tell() or size - handle.tell() > skip_ahead:
                    # the log was cut, or grows faster than it is worth replaying:
                    # rebuild the screen from its last replay_bytes
                    terminal = TerminalEmulator()
                    handle.seek(max(size - self.replay_bytes, 0))
                    if handle.tell():
                        handle.readline()  # start on a line, not inside an escape sequence
                fed = 0
                while fed < skip_ahead and (chunk := handle.read(READ_BYTES)):
                    terminal.feed(chunk)
                    fed += len(chunk)
                    if worker.is_cancelled:
                        return
                if fed:
                    lines = terminal.tail(MAX_LINES)
                    width = max((line.cell_len for line in lines), default=0)
                    self.post_message(self.Rendered(path, lines, width))
                time.sleep(POLL_INTERVAL_S)

    def on_pane_tail_rendered(self, message: Rendered) -> None:
        if message.path == self.path:  # ignore a file we stopped following
            self._show(message.lines, message.width)

    def _show(self, lines: list[Text], width: int) -> None:
        at_end = self.is_vertical_scroll_end
        self._lines = lines
        self._strips.clear()
        self.virtual_size = Size(width, len(lines))
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        style = self.rich_style
        width = self.size.width
        if index >= len(self._lines):
            return Strip.blank(width, style)
        strip = self._strips.get(index)
        if strip is None:
            line = self._lines[index]
            strip = Strip(line.render(self.app.console), line.cell_len).apply_style(style)
            self._strips[index] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)
