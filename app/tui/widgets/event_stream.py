"""The live event stream: a bounded log of job events as they land on the bus."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import RichLog

from app.tui.source import EventRow
from app.tui.widgets.theme import theme_style

EVENT_COLOURS = {
    "started": "primary-lighten-2",
    "progress": "foreground",
    "permission_required": "warning",
    "completed": "success",
    "error": "error-lighten-1",
}


MAX_LINES_PER_UPDATE = 60


class EventStream(RichLog):
    """Newest events at the bottom; `max_lines` keeps memory bounded however
    long the control room stays open."""

    DEFAULT_CSS = """
    EventStream { background: $surface; }
    """

    def __init__(self, *, max_lines: int = 1000, **kwargs: object) -> None:
        super().__init__(max_lines=max_lines, wrap=False, markup=False, **kwargs)  # type: ignore[arg-type]

    def add_events(self, events: Sequence[EventRow]) -> None:
        """Append events; a burst larger than a screenful is cut to its newest
        MAX_LINES_PER_UPDATE lines and a count of the rest (nobody reads 1,000
        lines a second, and each line costs a render)."""
        skipped = len(events) - MAX_LINES_PER_UPDATE
        if skipped > 0:
            muted = theme_style(self.app, "foreground-darken-2")
            self.write(Text(f"… {skipped} more events", style=muted))
            events = events[skipped:]
        for event in events:
            seq = f"#{event.seq}" if event.seq else ""
            line = Text.assemble(
                (event.ts.strftime("%H:%M:%S "), theme_style(self.app, "foreground-darken-2")),
                (f"{event.job_id} {seq:<5} ", theme_style(self.app, "foreground")),
                (
                    f"{event.event:<20}",
                    theme_style(self.app, EVENT_COLOURS.get(event.event, "foreground")),
                ),
                event.detail,
            )
            self.write(line)
