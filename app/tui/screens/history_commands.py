"""The History screen's commands in the palette (ctrl+p)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider


class HistoryCommands(Provider):
    """The History screen's own commands in the palette (ctrl+p) while it is open."""

    COMMANDS = (
        ("Rebuild history", "rebuild", "Export the bus and run the Spark history build"),
        ("Cycle agent", "cycle_agent", "Show the charts of one agent, the next, or all"),
        ("Cycle range", "cycle_range", "Show the last 24 hours, 7 days or 30 days"),
        ("Export CSV", "export_csv", "Write the per-agent table as a CSV file"),
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
