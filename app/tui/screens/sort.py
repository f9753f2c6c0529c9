"""`s`: sort the jobs table by a column, picked by its letter."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label

from app.tui.widgets.job_order import DEFAULT_ORDER, SORT_COLUMNS
from app.tui.widgets.theme import theme_style


class SortScreen(ModalScreen[str | None]):
    """A one-key menu over the main screen: a column's letter sorts by it (the same
    letter again reverses the order), `d` goes back to the default order (live jobs
    first), esc leaves the order as it is. Dismisses with the column key, "" for the
    default order, None for nothing. Its keys come from SORT_COLUMNS."""

    DEFAULT_CSS = """
    SortScreen { align: center bottom; background: $background 0%; }
    SortScreen > Vertical {
        width: 100%; height: auto; padding: 0 1; margin-bottom: 1;
        background: $panel; border: round $accent;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(column.letter, f"dismiss('{column.key}')", column.label, show=False)
            for column in SORT_COLUMNS
        ),
        Binding("d", f"dismiss('{DEFAULT_ORDER}')", "default order", show=False),
        Binding("escape", "dismiss(None)", "Cancel", show=False),
    ]

    def __init__(self, current: str = DEFAULT_ORDER, reverse: bool = False) -> None:
        super().__init__()
        self.current = current
        self.reverse = reverse

    def compose(self) -> ComposeResult:
        key = theme_style(self.app, "accent", bold=True)
        menu = Text("sort by: ")
        for column in SORT_COLUMNS:
            menu.append(column.letter, key)
            marker = (" ▼" if self.reverse else " ▲") if column.key == self.current else ""
            menu.append(f" {column.label}{marker}  ")
        menu.append("d", key)
        menu.append(" default (live first)  ")
        menu.append("esc", key)
        menu.append(" keep")
        with Vertical():
            yield Label(menu)
