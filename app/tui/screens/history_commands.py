"""What the History screen runs besides itself: the processes of a rebuild and its
commands in the palette (ctrl+p)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider


@dataclass(frozen=True)
class BuildStep:
    """One process of a rebuild: what the log calls it and the argv that runs it."""

    name: str
    argv: tuple[str, ...]


def default_build_steps(state_dir: Path, full: bool) -> list[BuildStep]:
    """Export the bus first (appends only what is new, so cheap when nothing is), then
    run the Spark build: a user who just ran demo agents gets a history with one key."""
    base = (sys.executable, "-m", "app", "--state-dir", str(state_dir))
    build = (*base, "history", "build", *(("--full",) if full else ()))
    return [BuildStep("export", (*base, "export")), BuildStep("history build", build)]


BuildSteps = Callable[[Path, bool], Sequence[BuildStep]]


class HistoryCommands(Provider):
    """The History screen's own commands in the palette (ctrl+p) while it is open."""

    COMMANDS = (
        ("Rebuild history", "rebuild", "Export the bus and run the Spark history build"),
        ("Cycle agent", "cycle_agent", "Show the charts of one agent, the next, or all"),
    )

    def _runner(self, action: str) -> Callable[[], Any]:
        screen = self.screen

        async def run() -> None:
            await screen.run_action(action)

        return run

    async def discover(self) -> Hits:
        for title, action, help_text in self.COMMANDS:
            yield DiscoveryHit(title, self._runner(action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, action, help_text in self.COMMANDS:
            score = matcher.match(f"{title} {help_text}")
            if score > 0:
                yield Hit(score, matcher.highlight(title), self._runner(action), help=help_text)
