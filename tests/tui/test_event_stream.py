"""The event stream keeps its scrollbar in step without a screen layout per write."""

from __future__ import annotations

from datetime import UTC, datetime

from textual.app import App, ComposeResult

from app.tui.source import EventRow
from app.tui.widgets.event_stream import EventStream

T0 = datetime(2025, 1, 15, tzinfo=UTC)


class StreamApp(App[None]):
    CSS = "EventStream { height: 8; }"

    def compose(self) -> ComposeResult:
        yield EventStream(max_lines=30)


def events(first: int, count: int) -> list[EventRow]:
    return [
        EventRow(n, T0, "3fa2c1d0", "progress", f"step {n}") for n in range(first, first + count)
    ]


async def test_a_growing_log_scrolls_to_its_newest_line_and_stays_bounded() -> None:
    app = StreamApp()
    async with app.run_test(size=(80, 12)) as pilot:
        stream = app.query_one(EventStream)
        for first in range(0, 40, 4):  # grows past its height, then past max_lines
            stream.add_events(events(first, 4))
            await pilot.pause()
            assert stream.virtual_size.height == len(stream.lines)
        assert stream.vertical_scrollbar.window_virtual_size == len(stream.lines) == 30
        assert stream.scroll_y == stream.max_scroll_y  # the newest event is in view
        assert "step 39" in stream.lines[-1].text


class TallStreamApp(App[None]):
    CSS = "EventStream { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield EventStream(max_lines=30)


async def test_the_newest_line_stays_in_view_when_the_terminal_shrinks() -> None:
    """The write scrolled to the end of a taller log; a smaller terminal (or anything
    else that shortens the log after a write) must not leave older lines showing."""
    app = TallStreamApp()
    async with app.run_test(size=(80, 20)) as pilot:
        stream = app.query_one(EventStream)
        stream.add_events(events(0, 25))
        await pilot.pause()
        assert 0 < stream.scroll_y == stream.max_scroll_y
        await pilot.resize_terminal(80, 12)
        await pilot.pause()
        assert stream.scroll_y == stream.max_scroll_y


async def test_a_reader_who_scrolled_up_stays_there_until_the_next_event() -> None:
    app = TallStreamApp()
    async with app.run_test(size=(80, 12)) as pilot:
        stream = app.query_one(EventStream)
        stream.add_events(events(0, 25))
        await pilot.pause()
        stream.scroll_to(y=2, animate=False)
        await pilot.resize_terminal(80, 14)
        await pilot.pause()
        assert stream.scroll_y == 2 < stream.max_scroll_y
        stream.add_events(events(25, 1))  # a new event brings the newest line back
        await pilot.pause()
        assert stream.scroll_y == stream.max_scroll_y
