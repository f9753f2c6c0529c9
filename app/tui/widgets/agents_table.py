"""The History screen's per-agent table: the range's figures, one row per agent."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.content import Content
from textual.widgets import Static

from app.tui.safe_text import as_text
from registry.history.summary import TABLE_COLUMNS

# The table's columns on screen (the CSV export has them all, in raw units).
SHOWN = (
    "agent", "done", "errors", "cancelled", "working", "waiting for a person", "idle",
    "asks", "response p50", "response p95", "queue p50", "tokens", "cost (estimated)",
)  # fmt: skip
HEADERS = (
    "agent", "done", "err", "cxl", "working", "waiting", "idle", "asks",
    "answer p50", "answer p95", "queue p50", "tokens", "cost ≈",
)  # fmt: skip
_INDEX = [TABLE_COLUMNS.index(name) for name in SHOWN]


class AgentsTable(Static):
    """A handful of rows, replaced whole when the range, the agent or the history
    changes, laid out here in fixed columns (a DataTable's first render was a fifth of
    the screen's opening, a Rich table's a sixth). Agent names shown as text, never
    markup."""

    DEFAULT_CSS = """
    AgentsTable { height: 7; padding: 0 1; overflow-y: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[tuple[Text | str, ...]] = []  # what is shown, agent first

    def show(self, rows: Sequence[tuple[str, ...]]) -> None:
        self.rows = [(as_text(row[_INDEX[0]]), *(row[i] for i in _INDEX[1:])) for row in rows]
        cells = [[str(cell) for cell in row] for row in self.rows]
        widths = [
            max([len(HEADERS[i]), *(len(row[i]) for row in cells)]) for i in range(len(HEADERS))
        ]
        header = HEADERS[0].ljust(widths[0]) + GAP + _numbers(HEADERS[1:], widths[1:])
        lines = [Content.styled(header, "bold $text-muted")]
        for row in cells:
            agent = Content(row[0])  # data: never markup
            pad = " " * (widths[0] - len(row[0]))
            lines.append(Content.assemble(agent, pad, GAP, _numbers(row[1:], widths[1:])))
        self.update(Content("\n").join(lines))


GAP = "  "


def _numbers(cells: Sequence[str], widths: Sequence[int]) -> str:
    """Cells right-aligned in their columns."""
    return GAP.join(cell.rjust(width) for cell, width in zip(cells, widths, strict=True))
