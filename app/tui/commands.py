"""Every control-room command, defined once: it feeds BINDINGS, the command
palette, `:` command mode and the `?` help screen, so they cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider

from app.tmux.attach import RETURN_KEY_LABEL


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
    screen_key: bool = False
    """Also bound on the screens that list jobs (`screen_binding`): Textual's
    Screen binds this key itself (tab: focus next), and a screen's binding wins."""
    on_screen: bool = False
    """Handled by the screen on top (a job's commands: app/tui/screens/job_commands.py),
    not by the app: the app's action hands it on, and is off where the screen has none."""

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

    @property
    def screen_binding(self) -> Binding:
        """The binding for a screen's own BINDINGS: the same command, run on the app."""
        return self.bound_on_screen(show=self.show)

    def bound_on_screen(self, *, show: bool) -> Binding:
        """This command in a screen's BINDINGS (a screen's footer may show what the
        main footer leaves out: the inbox shows n and a)."""
        return Binding(
            self.key,
            f"app.{self.action}",
            self.description,
            show=show,
            key_display=self.key_display,
            tooltip=self.help,
            id=f"control-room.screen.{self.name}",
        )


COMMANDS: tuple[Command, ...] = (
    Command(
        "attach",
        "enter",
        "attach_job",
        "Attach",
        f"Step into the agent's pane; {RETURN_KEY_LABEL} comes back here",
        key_display="⏎",
        on_screen=True,
    ),
    Command(
        "talk",
        "i",
        "talk",
        "Talk",
        "Send the agent a message, as if typed at its prompt",
        on_screen=True,
    ),
    Command(
        "detail",
        "d",
        "open_job",
        "Detail",
        "The job's page: timeline, prompt, work tree",
        on_screen=True,
    ),
    Command(
        "new", "plus", "new_job", "New", "Submit a new job to an agent session", key_display="+"
    ),
    Command(
        "cancel",
        "c",
        "cancel_job",
        "Cancel",
        "Cancel the selected job (asks first)",
        show=False,  # the footer keeps room for enter (step in) at 80 columns
        on_screen=True,
    ),
    Command(
        "resume",
        "r",
        "resume_job",
        "Resume",
        "Resume the selected errored, cancelled or interrupted job",
        show=False,
        on_screen=True,
    ),
    Command(
        "interrupted",
        "R",
        "resume_interrupted",
        "Resume all",
        "Resume every interrupted job (tmux killed, a reboot)",
        show=False,
    ),
    Command(
        "stop",
        "S",
        "stop_session",
        "Stop",
        "Stop the selected job's agent session (asks first)",
        show=False,
        on_screen=True,
    ),
    Command(
        "sort",
        "s",
        "sort",
        "Sort",
        "Sort the jobs: s, then a column's letter",
        show=False,
        on_screen=True,
    ),
    Command("yes", "y", "answer('yes')", "Yes", "Answer yes to the job waiting on you"),
    Command("no", "n", "answer('no')", "No", "Answer no to the job waiting on you", show=False),
    Command(
        "always",
        "a",
        "answer('always')",
        "Always",
        "Answer always (where its agent has that answer)",
        show=False,
    ),
    Command(
        "rule",
        "A",
        "make_rule",
        "Rule",
        "Make a policy rule from the waiting job's question (shows it first)",
        show=False,
    ),
    Command(
        "inbox",
        "w",
        "inbox",
        "Inbox",
        "List the jobs waiting on you, to answer them",
        show=False,  # the waiting panel says `w inbox` whenever it matters
    ),
    Command(
        "next",
        "tab",
        "next_waiting",
        "Next ⚠",
        "Jump to the next job waiting on you",
        key_display="tab",
        show=False,
        screen_key=True,
    ),
    Command(
        "diff",
        "v",
        "review_job",
        "Review",
        "Review the job's diff: approve, send back",
        show=False,
        on_screen=True,
    ),
    Command(
        "log",
        "l",
        "toggle_log",
        "Log",
        "Show or hide the live view of the job's pane",
        on_screen=True,
    ),
    Command(
        "tmux",
        "t",
        "tmux_split",
        "tmux",
        "Open the job's tmux control-room split",
        show=False,
        on_screen=True,
    ),
    Command(
        "history", "h", "history", "History", "Show throughput and latency history", show=False
    ),
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

BINDINGS: list[BindingType] = [
    *(command.binding for command in COMMANDS),
    # Textual quits on ctrl+q; here it is the key that comes back from an agent's pane,
    # and a second press (or key repeat) must not close the control room.
    Binding("ctrl+q", "returned", show=False, priority=True),
]

# The screens on top of the main one show `esc Back` in their footer (the app's
# `back` binding stays out of the main footer, where esc only clears things).
BACK = Binding("escape", "app.back", "Back", key_display="esc", tooltip="Go back")


# Moving in a list, as in vim, less and k9s: bound on the jobs table and the sessions
# panel (DataTable's own actions), listed by the help screen.
NAVIGATION: tuple[tuple[str, str, str, str], ...] = (
    ("j", "cursor_down", "down", "Move down one row (also ↓)"),
    ("k", "cursor_up", "up", "Move up one row (also ↑)"),
    ("g", "scroll_top", "first", "Go to the first row (also home)"),
    ("G", "scroll_bottom", "last", "Go to the last row (also end)"),
)
NAVIGATION_BINDINGS: list[BindingType] = [
    Binding(key, action, name, tooltip=help, show=False) for key, action, name, help in NAVIGATION
]


def command_called(name: str) -> Command:
    """The command named ``name`` (a KeyError is a typo in this module's callers)."""
    return next(command for command in COMMANDS if command.name == name)


ROW_BINDINGS: list[BindingType] = [
    command_called("attach").bound_on_screen(show=True),
    *NAVIGATION_BINDINGS,
]
"""For the tables that list jobs: a DataTable binds enter itself (select), which hid
the app's enter (step into the agent) from the footer and, in the inbox, did nothing."""

SCREEN_BINDINGS: list[BindingType] = [c.screen_binding for c in COMMANDS if c.screen_key]
"""For the screens that list jobs (main, inbox): their keys that Screen binds too."""


def screen_keys(*names: str, show: bool = True) -> list[BindingType]:
    """The named commands bound on a screen, with their keys in its footer or (``show``
    False) left out of it: a screen's binding wins over the app's, in the footer too."""
    return [command.bound_on_screen(show=show) for command in COMMANDS if command.name in names]


def command_named(name: str) -> Command | None:
    """The command `:name` refers to: its name, the key it is bound to (`:h` is `h`,
    History), or a prefix of one name only (as in vim/k9s)."""
    name = name.strip().lstrip(":")
    for command in COMMANDS:
        if name and (command.name == name.lower() or (command.key_display or command.key) == name):
            return command
    name = name.lower()
    matches = [command for command in COMMANDS if command.name.startswith(name)] if name else []
    return matches[0] if len(matches) == 1 else None


def commands_starting(name: str) -> list[str]:
    """The names a prefix could mean, for the error that says it is ambiguous."""
    name = name.strip().lstrip(":").lower()
    return [command.name for command in COMMANDS if name and command.name.startswith(name)]


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


SYSTEM_COMMANDS_SHADOWED = frozenset({"Quit", "Keys"})
"""Textual's own palette entries that one of COMMANDS already offers (q, ?)."""


def unshadowed(system: Iterable[SystemCommand]) -> Iterator[SystemCommand]:
    """Textual's palette entries but those COMMANDS offer too: the palette listed Quit
    and Keys/Help twice, in other words."""
    return (command for command in system if command.title not in SYSTEM_COMMANDS_SHADOWED)
