"""The new-job form: prompt, agent and session, handed to `source.submit`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label

from app.tui.messages import AgentsFound
from app.tui.safe_text import visible


@dataclass(frozen=True)
class NewJobRequest:
    """What the user asked for; the app submits it in a worker."""

    prompt: str
    agent: str
    agent_session: str


class NewJobScreen(ModalScreen[NewJobRequest | None]):
    """Refuses to close with an empty field, saying which one is missing."""

    DEFAULT_CSS = """
    NewJobScreen { align: center middle; background: $background 60%; }
    NewJobScreen > Vertical {
        width: 80; max-width: 100%; height: auto; padding: 1 2;
        background: $panel; border: thick $primary 80%;
    }
    NewJobScreen #error { color: $error; height: auto; }
    NewJobScreen #installed { color: $text-muted; padding: 0 1; }
    NewJobScreen Horizontal { height: auto; align-horizontal: right; }
    NewJobScreen Button { margin-left: 2; }
    """

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", show=False)]

    def __init__(
        self,
        agent: str | None = None,
        session: str = "",
        sessions: list[str] = [],  # noqa: B006
        installed: list[str] | None = None,
        find_installed: Callable[[], list[str]] | None = None,
    ) -> None:
        """`installed`: the agent kinds this machine can run (None: not known yet); the
        first is the default `agent`, else the demo. It was `claude`, which on a machine
        without it failed the job at once (exit 127). `find_installed` looks them up
        (PATH, the adapters: it blocks) when they are not known: the dialog does, in a
        worker, and says so when they are found."""
        super().__init__()
        self.installed = installed
        self.find_installed = find_installed
        self.default_agent = agent or (installed[0] if installed else "demo")
        # offered only labels that show as they are (no control or bidi characters)
        self.default_session = session if visible(session) == session else ""
        self.sessions = [label for label in sessions if visible(label) == label]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("[b]New job[/b]")
            yield Input(placeholder="What should the agent do?", id="prompt")
            yield Input(self.default_agent, placeholder="agent (claude, codex…)", id="agent")
            yield Label(self._installed_text(), id="installed")
            yield Input(
                self.default_session,
                placeholder="agent session label",
                id="session",
                suggester=SuggestFromList(self.sessions) if self.sessions else None,
            )
            yield Label("", id="error")
            with Horizontal():
                yield Button("Cancel", id="cancel")
                yield Button("Submit", id="submit", variant="primary")

    def _installed_text(self) -> Text:
        if self.installed is None:
            return Text("looking for installed agents…")
        return Text(f"installed here: {', '.join(self.installed)}")

    def show_installed(self, installed: list[str]) -> None:
        """The installed agents, found after the dialog opened: the default agent
        follows unless the person has typed one."""
        agent = self.query_one("#agent", Input)
        if agent.value == self.default_agent and installed:
            self.default_agent = agent.value = installed[0]
        self.installed = installed
        self.query_one("#installed", Label).update(self._installed_text())

    def on_mount(self) -> None:
        self.query_one("#prompt", Input).focus()
        if self.installed is None and self.find_installed is not None:
            self._find(self.find_installed)

    @work(thread=True, exclusive=True, group="agents", description="Finding installed agents")
    def _find(self, find_installed: Callable[[], list[str]]) -> None:
        self.post_message(AgentsFound(find_installed()))  # bubbles on to the app's cache

    def on_agents_found(self, message: AgentsFound) -> None:
        self.show_installed(message.kinds)

    @on(Button.Pressed, "#cancel")
    def _cancelled(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    @on(Button.Pressed, "#submit")
    def _submit(self) -> None:
        values = {
            name: self.query_one(f"#{name}", Input).value.strip()
            for name in ("prompt", "agent", "session")
        }
        missing = [name for name, value in values.items() if not value]
        if missing:
            self.query_one("#error", Label).update(f"Missing: {', '.join(missing)}")
            self.query_one(f"#{missing[0]}", Input).focus()
            return
        self.dismiss(NewJobRequest(values["prompt"], values["agent"], values["session"]))
