"""`i`: a prompt box whose text goes to the selected job's agent."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from app.tui.safe_text import visible


class TalkScreen(ModalScreen[str | None]):
    """One line to the agent, sent as `orchestrate send` sends it: pasted into its pane
    (bracketed paste, then Enter; never keys typed from the text) and recorded on the
    job as an `input` event. Enter sends, esc closes without sending."""

    DEFAULT_CSS = """
    TalkScreen { align: center bottom; background: $background 40%; }
    TalkScreen > Vertical {
        width: 100%; height: auto; padding: 0 1; margin-bottom: 1;
        background: $panel; border: thick $primary 80%;
    }
    TalkScreen #to { color: $text-muted; }
    TalkScreen #error { color: $error; height: auto; }
    """

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", show=False)]

    def __init__(self, job_id: str, agent: str, *, reopens: bool = False) -> None:
        """``reopens``: the job is completed, its agent still at its prompt: sending runs
        the job again (said in the box, before anything is sent)."""
        super().__init__()
        self.job_id = job_id
        self.agent = agent
        self.reopens = reopens

    def compose(self) -> ComposeResult:
        who = f"to job {self.job_id}" + (f" ({visible(self.agent)})" if self.agent else "")
        again = " · it is completed: this runs it again" if self.reopens else ""
        with Vertical():
            yield Label(Text(f"{who}{again} · enter sends · esc closes"), id="to")
            yield Input(placeholder="Tell the agent…", id="message")
            yield Label("", id="error")

    def on_mount(self) -> None:
        self.query_one("#message", Input).focus()

    @on(Input.Submitted, "#message")
    def _send(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.query_one("#error", Label).update("Nothing to send: type a message first")
            return
        self.dismiss(event.value)
