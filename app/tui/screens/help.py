"""`?`: every key the control room answers to, from the one command list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Label

from app.tui.commands import COMMANDS, NAVIGATION, Command


class HelpScreen(ModalScreen[None]):
    """Built from COMMANDS, so a new command shows up here without editing this file:
    the keys of the screen it was opened on first, then the commands that work there."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; background: $background 60%; }
    HelpScreen > Vertical {
        width: 84; max-width: 100%; height: auto; max-height: 100%; padding: 1 2;
        background: $panel; border: thick $primary 80%;
    }
    HelpScreen DataTable { height: auto; max-height: 30; }
    HelpScreen #hint { color: $text-muted; margin-top: 1; }
    """

    BINDINGS = [
        Binding("escape,question_mark,q", "dismiss(None)", "Back", key_display="esc"),
    ]

    def __init__(
        self,
        own_keys: Sequence[Binding] = (),
        commands: Sequence[Command] = COMMANDS,
        *,
        navigation: bool = False,
    ) -> None:
        """`own_keys`: the bindings of the screen underneath; `commands`: those that
        apply there (the job keys do nothing on the History screen); `navigation`: list
        j/k/g/G too (a screen with the jobs table)."""
        super().__init__()
        self.own_keys = list(own_keys)
        self.commands = list(commands)
        self.navigation = navigation

    @classmethod
    def of(
        cls, screen: Screen[Any], commands: Sequence[Command], *, navigation: bool
    ) -> HelpScreen:
        """The help for ``screen``: its own shown keys (app.* ones, such as esc and the
        inbox's y/n/a, are commands: listed once, with ``commands``)."""
        own = [
            binding
            for binding in screen.BINDINGS
            if isinstance(binding, Binding)
            and binding.show
            and not binding.action.startswith("app.")
        ]
        return cls(own, commands, navigation=navigation)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("[b]Keys[/b]")
            yield DataTable(cursor_type="none", id="keys")
            yield Label(
                "ctrl+p palette · `:name` runs a command · click a row twice: its page · "
                "click a header: sort",
                id="hint",
            )
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#keys", DataTable)
        table.add_columns("key", "command", "what it does")
        for binding in self.own_keys:
            name = binding.description.lower()
            table.add_row(
                binding.key_display or binding.key, name, binding.tooltip, key=f"screen.{name}"
            )
        for command in self.commands:
            table.add_row(
                command.key_display or command.key, command.name, command.help, key=command.name
            )
        if self.navigation:
            for key, _action, name, description in NAVIGATION:
                table.add_row(key, name, description, key=f"move.{key}")
