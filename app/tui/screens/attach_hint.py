"""Before the first step into an agent's pane: how to come back."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from app.tui.widgets.theme import theme_style


class AttachHintScreen(ModalScreen[bool]):
    """Shown once per run, on the first `enter`: the person is about to leave this
    screen for a tmux pane, so it says which key brings them back (and that the
    control room waits as it is). Attach is focused: a second `enter` goes."""

    DEFAULT_CSS = """
    AttachHintScreen { align: center middle; background: $background 60%; }
    AttachHintScreen > Vertical {
        width: 66; max-width: 100%; height: auto; padding: 1 2;
        background: $panel; border: thick $primary 80%;
    }
    AttachHintScreen #hint { width: 1fr; margin-bottom: 1; }
    AttachHintScreen Horizontal { height: auto; align-horizontal: right; }
    AttachHintScreen Button { margin-left: 2; }
    """

    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel", show=False)]

    def __init__(self, job_id: str, return_key: str) -> None:
        super().__init__()
        self.job_id = job_id
        self.return_key = return_key

    def compose(self) -> ComposeResult:
        key = theme_style(self.app, "accent", bold=True)
        hint = Text.assemble(
            "You are stepping into the pane of job ",
            (self.job_id, "bold"),
            ": what you type goes to its agent.\n\n",
            "Press ",
            (self.return_key, key),
            " to come back here (tmux's ",
            ("prefix d", key),
            " works too). The control room stays as you leave it: cursor, filter, screen.",
        )
        with Vertical():
            yield Label(hint, id="hint")
            with Horizontal():
                yield Button("Cancel", id="cancel")
                yield Button("Attach", id="attach", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#attach", Button).focus()

    @on(Button.Pressed, "#cancel")
    def _cancelled(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#attach")
    def _go(self) -> None:
        self.dismiss(True)
