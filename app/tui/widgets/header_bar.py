"""The header: jobs per state, events per second and the broker connection."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from app.tui.safe_text import visible
from app.tui.source import JOB_STATUSES, Snapshot
from app.tui.widgets.theme import STATUS_COLOURS, theme_style

BROKER_COLOURS = {
    "connected": "success",
    "reconnecting": "warning",
    "standby": "foreground-darken-2",
    "none": "foreground-darken-2",
}


class HeaderBar(Widget):
    """One line of totals: what is running, how busy the bus is, whether MQTT is up."""

    DEFAULT_CSS = """
    HeaderBar { height: 1; background: $panel; color: $foreground; padding: 0 1; }
    """

    snapshot: reactive[Snapshot] = reactive(Snapshot)
    """The latest totals from the source."""
    filter_text: reactive[str] = reactive("")
    """The active `/` filter, shown so a filtered table is never mistaken for all jobs."""
    waiting: reactive[int] = reactive(0)
    """Jobs waiting for a permission answer; shown only when there are some."""
    problem: reactive[str] = reactive("")
    """Why the registry cannot be read; shown for as long as that lasts."""

    def render(self) -> Text:
        text = Text.assemble(("orchestrate ", theme_style(self.app, "accent", bold=True)))
        for status in JOB_STATUSES:
            count = self.snapshot.counts.get(status, 0)
            text.append(f" {status} ", theme_style(self.app, STATUS_COLOURS[status]))
            text.append(str(count), theme_style(self.app, "foreground", bold=True))
            if status == "running" and self.waiting:
                text.append(" waiting ", theme_style(self.app, "warning", bold=True))
                text.append(str(self.waiting), theme_style(self.app, "warning", bold=True))
            if status == "running" and self.snapshot.interrupted:
                style = theme_style(self.app, STATUS_COLOURS["interrupted"], bold=True)
                text.append(f" interrupted {self.snapshot.interrupted}", style)
            if status == "completed" and self.snapshot.in_review:
                text.append(" in review ", theme_style(self.app, "accent", bold=True))
                text.append(
                    str(self.snapshot.in_review), theme_style(self.app, "accent", bold=True)
                )
        text.append(f"  │ {self.snapshot.events_per_s:.1f} ev/s │ broker ")
        broker = self.snapshot.broker_state
        text.append(broker, theme_style(self.app, BROKER_COLOURS.get(broker, "foreground")))
        if self.problem:
            text.append(" │ ⚠ registry unreadable", theme_style(self.app, "error", bold=True))
        if self.filter_text:
            text.append(f" │ filter: {visible(self.filter_text)}", theme_style(self.app, "warning"))
        return text
