"""The History screen's per-agent table: the range's figures, one row per agent."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

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


class AgentsTable(DataTable[Text | str]):
    """Rows replaced as a whole when the range, the agent or the history changes (a
    handful of rows); agent names shown as text, never markup."""

    DEFAULT_CSS = """
    AgentsTable { height: 7; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        for header in HEADERS:
            self.add_column(header, key=header)

    def show(self, rows: Sequence[tuple[str, ...]]) -> None:
        with self.app.batch_update():
            self.clear()
            for row in rows:
                cells = [row[i] for i in _INDEX]
                self.add_row(as_text(cells[0]), *cells[1:])
