"""The History screen's range picker: one line of labels, the picked one highlighted;
a click on a label (or the screen's `r`) picks it."""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

PREFIX = " range "


class RangePicker(Static):
    """A line of ranges ("24 h", "7 d", "30 d"); a Static, not Tabs: the History screen
    opens in a few tens of ms, and Tabs' animated underline cost a sixth of that."""

    DEFAULT_CSS = """
    RangePicker { height: 1; padding: 0 1; color: $text-muted; }
    """

    hours: reactive[int] = reactive(24)
    """The range picked, in hours."""

    @dataclass
    class Picked(Message):
        """A label was clicked."""

        picker: RangePicker
        hours: int

        @property
        def control(self) -> RangePicker:
            return self.picker

    def __init__(self, ranges: dict[str, int], hours: int, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ranges = ranges
        self.set_reactive(RangePicker.hours, hours)
        self._spans: list[tuple[int, int, int]] = []  # (first column, last column, hours)

    def render(self) -> Content:
        parts: list[Content | str] = [PREFIX]
        column = len(PREFIX)
        self._spans = []
        for label, hours in self.ranges.items():
            text = f" {label} "
            style = "bold reverse $accent" if hours == self.hours else ""
            parts.append(Content.styled(text, style) if style else text)
            self._spans.append((column, column + len(text) - 1, hours))
            parts.append(" ")
            column += len(text) + 1
        return Content.assemble(*parts)

    def on_click(self, event: events.Click) -> None:
        x = event.x - 1  # the padding
        for first, last, hours in self._spans:
            if first <= x <= last:
                self.post_message(self.Picked(self, hours))
                return
