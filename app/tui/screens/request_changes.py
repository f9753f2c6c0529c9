"""The text box for `x` on the Review screen: what the agent should change."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, TextArea


class RequestChangesScreen(ModalScreen[str | None]):
    """Dismisses with the text on Send (ctrl+s), None on Cancel or escape."""

    DEFAULT_CSS = """
    RequestChangesScreen { align: center middle; background: $background 60%; }
    RequestChangesScreen > Vertical {
        width: 80; height: auto; max-height: 90%; padding: 1 2;
        background: $panel; border: thick $accent 80%;
    }
    RequestChangesScreen TextArea { height: 10; margin: 1 0; }
    RequestChangesScreen Horizontal { height: auto; align-horizontal: right; }
    RequestChangesScreen Button { margin-left: 2; }
    """

    BINDINGS = [
        Binding("escape", "dismiss(None)", "Cancel", show=False),
        Binding("ctrl+s", "send", "Send", show=False),
    ]

    def __init__(self, job_id: str) -> None:
        super().__init__()
        self.job_id = job_id

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                Text(f"Changes for job {self.job_id}; pasted into its agent's pane (ctrl+s sends)")
            )
            yield TextArea(id="message", soft_wrap=True, show_line_numbers=False)
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Send", id="send", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#message", TextArea).focus()

    @on(Button.Pressed, "#cancel")
    def _cancelled(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#send")
    def _send_pressed(self) -> None:
        self.action_send()

    def action_send(self) -> None:
        text = self.query_one("#message", TextArea).text.strip()
        if not text:
            self.notify("Write what should change first", severity="warning")
            return
        self.dismiss(text)
