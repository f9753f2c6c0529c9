"""The history screen slot: charts from the Spark-built parquet (filled later)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static


class HistoryScreen(Screen[None]):
    """Placeholder until the history pipeline exists: says how to build it."""

    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen #empty {
        width: auto; padding: 1 2; border: round $primary; color: $text; background: $panel;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static("No history has been built yet. Run `orchestrate history build`", id="empty")
        yield Footer()
