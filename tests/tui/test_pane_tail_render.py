"""The pane preview draws again only the lines that changed (issue 31: a preview at ten
renders a second re-rendered every visible line each time)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from app.tui.widgets.pane_tail import PaneTail

HEIGHT = 10


class TailApp(App[None]):
    def compose(self) -> ComposeResult:
        yield PaneTail(id="tail")


def numbered(count: int) -> list[Text]:
    return [Text.assemble((f"line {n}", "green"), end="") for n in range(count)]


def drawn(tail: PaneTail) -> list[str]:
    rows = range(tail.scrollable_content_region.height)  # inside the border, above the bar
    return ["".join(segment.text for segment in tail.render_line(y)).rstrip() for y in rows]


def strip_of(tail: PaneTail, line: Text) -> object:
    return tail._strips[id(line)][1]


async def test_an_unchanged_line_keeps_its_render_and_a_changed_one_is_drawn() -> None:
    """Same length, same place: the row that changed shows its new text, and the rows
    that read the same (the same Text, or an equal new one) keep their strips."""
    app = TailApp()
    async with app.run_test(size=(40, HEIGHT)) as pilot:
        tail = app.query_one(PaneTail)
        lines = numbered(30)
        tail._show(lines, 10)
        await pilot.pause()
        assert drawn(tail)[-1] == "line 29"  # it follows the end
        same, equal = strip_of(tail, lines[25]), strip_of(tail, lines[26])
        last = strip_of(tail, lines[29])
        update = [*lines[:26], Text.assemble(("line 26", "green"), end=""), *lines[27:29]]
        update.append(Text("line 29, and more", end=""))
        tail._show(update, 17)
        await pilot.pause()
        assert drawn(tail)[-1] == "line 29, and more" and drawn(tail)[-4] == "line 26"
        assert strip_of(tail, update[25]) is same and strip_of(tail, update[26]) is equal
        assert strip_of(tail, update[29]) is not last


async def test_a_line_changed_in_style_only_is_drawn_again() -> None:
    """Equal text is not enough: a row whose colour changed is a changed row."""
    app = TailApp()
    async with app.run_test(size=(40, HEIGHT)) as pilot:
        tail = app.query_one(PaneTail)
        lines = numbered(5)
        tail._show(lines, 6)
        await pilot.pause()
        red = [*lines[:4], Text.assemble(("line 4", "red"), end="")]
        tail._show(red, 6)
        await pilot.pause()
        segments = list(tail.render_line(4))
        assert any(
            s.text.startswith("line 4") and s.style and "red" in str(s.style) for s in segments
        )


async def test_new_output_scrolls_and_lines_already_drawn_are_not_rendered_again() -> None:
    """The agent printed two lines: the tail follows the end, and the lines that only
    moved up keep their strips."""
    app = TailApp()
    async with app.run_test(size=(40, HEIGHT)) as pilot:
        tail = app.query_one(PaneTail)
        lines = numbered(30)
        tail._show(lines, 10)
        await pilot.pause()
        moved = strip_of(tail, lines[29])
        more = [*lines, *numbered(32)[30:]]
        tail._show(more, 10)
        await pilot.pause()
        assert drawn(tail) == [
            f"line {n}" for n in range(32 - tail.scrollable_content_region.height, 32)
        ]
        assert strip_of(tail, more[29]) is moved
