"""Choose how to stop an agent session: graceful, soft or hard."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, RadioButton, RadioSet

from app.tui.safe_text import as_text
from app.tui.source import STOP_MODES, StopMode

MODE_HELP: dict[StopMode, str] = {
    "graceful": "graceful: ask the agent to finish, keep it resumable",
    "soft": "soft: archive the session, leave its tmux pane alive",
    "hard": "hard: kill the tmux pane now",
}


class StopSessionScreen(ModalScreen[StopMode | None]):
    """Dismisses with the chosen mode, or None when cancelled."""

    DEFAULT_CSS = """
    StopSessionScreen { align: center middle; background: $background 60%; }
    StopSessionScreen > Vertical {
        width: 64; height: auto; padding: 1 2; background: $panel; border: thick $warning 80%;
    }
    StopSessionScreen RadioSet { width: 1fr; margin: 1 0; }
    StopSessionScreen Horizontal { height: auto; align-horizontal: right; }
    StopSessionScreen Button { margin-left: 2; }
    """

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", show=False)]

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def compose(self) -> ComposeResult:
        with Vertical():
            question = Text.assemble("Stop session ", as_text(self.label, "bold"), ": how?")
            yield Label(question)
            with RadioSet(id="mode"):
                for index, mode in enumerate(STOP_MODES):
                    yield RadioButton(MODE_HELP[mode], value=index == 0, id=f"mode-{mode}")
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Stop…", id="stop", variant="warning")

    @property
    def mode(self) -> StopMode:
        index = self.query_one(RadioSet).pressed_index
        return STOP_MODES[max(index, 0)]

    @on(Button.Pressed, "#cancel")
    def _cancelled(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#stop")
    def _stop(self) -> None:
        self.dismiss(self.mode)
