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
from textual.worker import Worker, get_current_worker

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
        self._strips: dict[int, tuple[Text, Strip]] = {}
        """Each shown line's render, by the line's id (with the line, so a reused id
        is never mistaken for it)."""

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
        try:
            self._follow(path, terminal, worker)
        finally:
            terminal.close()

    def _follow(self, path: Path, terminal: TerminalEmulator, worker: Worker[None]) -> None:
        """Feed the log's new bytes to ``terminal`` and post what it shows, until
        cancelled (a log cut or far ahead starts a new emulator)."""
        with path.open("rb") as handle:
            while not worker.is_cancelled:
                size = os.fstat(handle.fileno()).st_size
                skip_ahead = 4 * self.replay_bytes
                if size < handle.tell() or size - handle.tell() > skip_ahead:
                    # the log was cut, or grows faster than it is worth replaying:
                    # rebuild the screen from its last replay_bytes
                    terminal.reset()
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
        """Show ``lines``, drawing again only what changed.

        A line keeps its rendered strip while it is shown: the scrollback's lines are
        the same `Text` objects from one render to the next, and a screen row that
        reads the same (also one that scrolled up) is equal to the one drawn (`Text`
        equality is text and spans; the base style is compared too). When
        nothing moved (same length, same scroll position) only the rows whose text
        changed are repainted; ten times a second a preview used to render and
        repaint every visible line, each a fresh `Strip` for the garbage collector."""
        at_end = self.is_vertical_scroll_end
        before = (self.virtual_size, self.scroll_offset)
        drawn = self._strips
        self._lines = lines
        self.virtual_size = Size(width, len(lines))
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        by_text = {line.plain: (line, strip) for line, strip in drawn.values()}
        kept: dict[int, tuple[Text, Strip]] = {}
        changed: list[int] = []
        top = self.scroll_offset.y
        for index in range(top, min(top + self.scrollable_content_region.height, len(lines))):
            line = lines[index]
            same = drawn.get(id(line))
            if same is None or same[0] is not line:
                same = by_text.get(line.plain)
                alike = same is not None and same[0] == line and same[0].style == line.style
                same = (line, same[1]) if same is not None and alike else None
            if same is None:
                changed.append(index)
            else:
                kept[id(line)] = same
        self._strips = kept
        if (self.virtual_size, self.scroll_offset) != before or not drawn:
            self.refresh()
            return
        for index in changed:
            self.refresh_lines(index)

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
        line = self._lines[index]
        drawn = self._strips.get(id(line))
        if drawn is None or drawn[0] is not line:
            strip = Strip(line.render(self.app.console), line.cell_len).apply_style(style)
            drawn = self._strips[id(line)] = (line, strip)
        return (
            drawn[1].crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)
        )
