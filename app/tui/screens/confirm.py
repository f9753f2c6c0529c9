"""A yes/no question before a destructive action; Cancel is focused by default."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from app.tui.safe_text import as_text


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True only when the user picks the confirm button: enter on
    the default focus, escape and a click outside all keep things as they are."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; background: $background 60%; }
    ConfirmScreen > Vertical {
        width: 60; height: auto; padding: 1 2;
        background: $panel; border: thick $error 80%;
    }
    ConfirmScreen #question { width: 1fr; margin-bottom: 1; }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    """

    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel", show=False)]

    def __init__(self, question: str | Text, confirm_label: str) -> None:
        """``question``: plain text, or a `Text` already made safe (a branch, a path);
        neither is ever read as markup."""
        super().__init__()
        self.question = question
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical():
            question = self.question
            shown = question if isinstance(question, Text) else as_text(question, one_line=False)
            yield Label(shown, id="question")  # names data
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button(self.confirm_label, id="confirm", variant="error")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed, "#cancel")
    def _cancelled(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#confirm")
    def _confirmed(self) -> None:
        self.dismiss(True)
