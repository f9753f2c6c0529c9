"""The live event stream: a bounded log of job events as they land on the bus."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import RichLog

from app.tui.safe_text import visible
from app.tui.source import EventRow
from app.tui.widgets.theme import theme_style

EVENT_COLOURS = {
    "started": "primary-lighten-2",
    "progress": "foreground",
    "permission_required": "warning",
    "completed": "success",
    "error": "error-lighten-1",
}


MAX_LINES_PER_UPDATE = 20  # more than the stream's height: the rest would scroll past unseen
LINE_CACHE_SIZE = 100  # rendered lines kept (RichLog's default: 1,024)


class EventStream(RichLog):
    """Newest events at the bottom; `max_lines` keeps memory bounded however
    long the control room stays open."""

    DEFAULT_CSS = """
    EventStream { background: $surface; }
    """

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), repaint=True, layout=False)
    """Widget's `virtual_size` asks for a layout on every change, and until the log
    is full every write changes it: each write re-laid-out the whole screen (~50 ms
    at 120x40). The log's own size is fixed by the stylesheet, so its content
    cannot move anything else: a new virtual size only needs the scrollbars
    updated (a scrollbar appearing still lays out, through its own reactive)."""

    def watch_virtual_size(self, size: Size) -> None:
        if self.is_mounted:
            self._scroll_update(size)

    def __init__(self, *, max_lines: int = 250, **kwargs: object) -> None:
        super().__init__(max_lines=max_lines, wrap=False, markup=False, **kwargs)  # type: ignore[arg-type]
        # RichLog caches 1,024 rendered lines keyed by scroll position; while events
        # flow every key is new, so the cache fills with stale lines (each a Strip
        # with its own caches) that every full garbage collection walks. A few
        # screenfuls are enough.
        self._line_cache.maxsize = LINE_CACHE_SIZE

    def on_mount(self) -> None:
        # Anchored, the log is kept at its newest line through every layout too
        # (the terminal resized, a scrollbar appearing after the write's own scroll),
        # until the user scrolls up; RichLog's auto-scroll only acts on writes.
        self.anchor()

    def add_events(self, events: Sequence[EventRow]) -> None:
        """Append events as one write (one measure, one render, one scroll, where
        a write per line cost ~0.5 ms each); a burst larger than a screenful is
        cut to its newest MAX_LINES_PER_UPDATE lines and a count of the rest
        (nobody reads 1,000 lines a second)."""
        if not events:
            return
        lines: list[Text] = []
        skipped = len(events) - MAX_LINES_PER_UPDATE
        if skipped > 0:
            muted = theme_style(self.app, "foreground-darken-2")
            lines.append(Text(f"… {skipped} more events", style=muted))
            events = events[skipped:]
        time_style = theme_style(self.app, "foreground-darken-2")
        job_style = theme_style(self.app, "foreground")
        for event in events:
            seq = f"#{event.seq}" if event.seq else ""
            lines.append(
                Text.assemble(
                    (event.ts.strftime("%H:%M:%S "), time_style),
                    (f"{visible(event.job_id)} {seq:<5} ", job_style),
                    (
                        f"{visible(event.event):<20}",
                        theme_style(self.app, EVENT_COLOURS.get(event.event, "foreground")),
                    ),
                    visible(event.detail),  # one line per event: a newline cannot fake another
                )
            )
        self.write(Text("\n").join(lines))
