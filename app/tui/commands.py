"""Every control-room command, defined once: it feeds BINDINGS, the command
palette, `:` command mode and the `?` help screen, so they cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider


@dataclass(frozen=True)
class Command:
    """One user command: its key, the action it runs, and how it is described."""

    name: str  # what `:name` runs in command mode, and the palette title
    key: str
    action: str
    description: str  # short, for the footer
    help: str  # one sentence, for the palette and the help screen
    key_display: str | None = None
    show: bool = True

    @property
    def binding(self) -> Binding:
        return Binding(
            self.key,
            self.action,
            self.description,
            show=self.show,
            key_display=self.key_display,
            tooltip=self.help,
            id=f"control-room.{self.name}",
        )


COMMANDS: tuple[Command, ...] = (
    Command("open", "enter", "open_job", "Detail", "Open the selected job's detail", show=False),
    Command("new", "n", "new_job", "New", "Submit a new job to an agent session"),
    Command("cancel", "c", "cancel_job", "Cancel", "Cancel the selected job (asks first)"),
    Command(
        "resume",
        "r",
        "resume_job",
        "Resume",
        "Resume the selected errored, cancelled or interrupted job",
    ),
    Command(
        "interrupted",
        "R",
        "resume_interrupted",
        "Resume all",
        "Resume every interrupted job (tmux killed, a reboot)",
        show=False,
    ),
    Command("stop", "s", "stop_session", "Stop", "Stop the selected job's agent session"),
    Command("yes", "y", "answer(True)", "Yes", "Answer yes to the job's permission prompt"),
    Command(
        "no", "N", "answer(False)", "No", "Answer no to the job's permission prompt", show=False
    ),
    Command("diff", "v", "review_job", "Review", "Review the job's diff: approve, send back"),
    Command("log", "l", "toggle_log", "Log", "Show or hide the split tail of the job's pane"),
    Command(
        "tmux", "t", "tmux_split", "tmux", "Open the job's tmux control-room split", show=False
    ),
    Command("history", "h", "history", "History", "Show throughput and latency history"),
    Command("filter", "slash", "filter", "Filter", "Filter jobs by text", key_display="/"),
    Command(
        "command",
        "colon",
        "command_mode",
        "Cmd",
        "Type a command name",
        key_display=":",
        show=False,
    ),
    Command("help", "question_mark", "help", "Help", "List every key", key_display="?"),
    Command(
        "back",
        "escape",
        "back",
        "Back",
        "Go back, or clear the filter",
        key_display="esc",
        show=False,
    ),
    Command("quit", "q", "quit", "Quit", "Leave the control room"),
)

BINDINGS: list[BindingType] = [command.binding for command in COMMANDS]

# The screens on top of the main one show `esc Back` in their footer (the app's
# `back` binding stays out of the main footer, where esc only clears things).
BACK = Binding("escape", "app.back", "Back", key_display="esc", tooltip="Go back")


def command_named(name: str) -> Command | None:
    """The command `:name` refers to (a unique prefix is enough, as in vim/k9s)."""
    name = name.strip().lstrip(":").lower()
    exact = [command for command in COMMANDS if command.name == name]
    if exact:
        return exact[0]
    matches = [command for command in COMMANDS if command.name.startswith(name)] if name else []
    return matches[0] if len(matches) == 1 else None


class ControlRoomCommands(Provider):
    """The command palette's view of COMMANDS: each runs the same action as its key."""

    def _commands(self) -> list[Command]:
        # the palette itself would be a strange thing to run from the palette
        return [command for command in COMMANDS if command.name not in {"back", "command"}]

    def _runner(self, command: Command):  # type: ignore[no-untyped-def]
        async def run() -> None:
            await self.app.run_action(command.action)

        return run

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(command.name.title(), self._runner(command), help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            text = f"{command.name.title()} {command.help}"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), self._runner(command), help=command.help)
