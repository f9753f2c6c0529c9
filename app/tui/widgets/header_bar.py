"""The header: jobs per state, events per second and the broker connection."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from app.tui.safe_text import visible
from app.tui.source import JOB_STATUSES, Snapshot
from app.tui.widgets.theme import ACTIVITY_ORDER, look_of, look_style, theme_style
from registry.vocabulary import JobStatus

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
    activities: reactive[dict[str, int]] = reactive(dict)
    """Running jobs per activity (`working`, `waiting`, `idle`…); the non-zero ones
    are shown after the running count, each with its glyph and colour."""

    def render(self) -> Text:
        text = Text.assemble(("orchestrate ", theme_style(self.app, "accent", bold=True)))
        if not any(self.snapshot.counts.get(status) for status in JOB_STATUSES):
            text.append(" no jobs", theme_style(self.app, "foreground-darken-2"))
        for status in JOB_STATUSES:
            count = self.snapshot.counts.get(status, 0)
            if not count:  # a zero is noise: the states present are what matters
                continue
            if status == JobStatus.RUNNING and self._append_activities(text):
                continue
            text.append(f" {look_of(status).glyph} {status} ", look_style(self.app, status))
            text.append(str(count), theme_style(self.app, "foreground", bold=True))
            if status == JobStatus.COMPLETED and self.snapshot.in_review:
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

    def _append_activities(self, text: Text) -> bool:
        """The running jobs counted by what their agents do, `⚠ waiting 1 ● working 2
        ◇ idle 1`, those needing a person first; False if no activity is known."""
        counts = dict(self.activities)
        if self.waiting:
            counts["waiting"] = self.waiting
        counts.pop("running", None)  # running, activity unknown: counted as running
        shown = [state for state in (*ACTIVITY_ORDER, "running") if counts.get(state)]
        unknown = self.snapshot.counts.get("running", 0) - sum(counts.values())
        if not shown:
            return False
        if unknown > 0:
            shown.append("running")
            counts["running"] = unknown
        for state in shown:
            text.append(f" {look_of(state).glyph} {state} ", look_style(self.app, state))
            text.append(str(counts[state]), theme_style(self.app, "foreground", bold=True))
        return True
