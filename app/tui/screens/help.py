"""`?`: every key the control room answers to, from the one command list."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from app.tui.commands import COMMANDS


class HelpScreen(ModalScreen[None]):
    """Built from COMMANDS, so a new command shows up here without editing this file."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; background: $background 60%; }
    HelpScreen > Vertical {
        width: 84; height: auto; max-height: 90%; padding: 1 2;
        background: $panel; border: thick $primary 80%;
    }
    HelpScreen DataTable { height: auto; max-height: 30; }
    HelpScreen #hint { color: $text-muted; margin-top: 1; }
    """

    BINDINGS = [Binding("escape,question_mark,q", "dismiss(None)", "Close", show=False)]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("[b]Keys[/b]")
            yield DataTable(cursor_type="none", id="keys")
            yield Label(
                "ctrl+p palette · `:name` runs a command · click a row twice to open it",
                id="hint",
            )

    def on_mount(self) -> None:
        table = self.query_one("#keys", DataTable)
        table.add_columns("key", "command", "what it does")
        for command in COMMANDS:
            table.add_row(
                command.key_display or command.key, command.name, command.help, key=command.name
            )
