"""A question that began before `watch` opened rings the bell and reaches the notify
command every time, not 2 runs in 3: whether its wait was recorded before the
control room's first look or just after no longer decides it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from app.tui.needs_you import SignalSettings, TerminalSignals
from app.tui.source import JobRow
from registry.needs_you import Signal

ASKED = datetime(2025, 1, 15, 11, 0, tzinfo=UTC)  # before the control room opened
OPENED = datetime(2025, 1, 15, 12, 0, tzinfo=UTC)


class Announcements:
    """Stands in for the notifier: what it was handed, in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send(self, signals: Iterable[Signal]) -> None:
        self.sent.extend((signal.event, signal.job.job_id) for signal in signals)

    def close(self) -> None:
        pass


def row(job_id: str, status: str = "running", *, waiting: bool = False) -> JobRow:
    return JobRow(
        job_id,
        status,  # type: ignore[arg-type]
        "claude",
        "s1",
        ASKED,
        ASKED,
        waiting_permission=waiting,
        state_since=ASKED,
        question="Bash `ls`" if waiting else "",
    )


def signals() -> tuple[TerminalSignals, Announcements]:
    app: Any = SimpleNamespace(_driver=None, is_headless=True)
    terminal = TerminalSignals(app, SignalSettings(), claim=lambda _: True, report=print)
    told = Announcements()
    terminal.notifier = told  # type: ignore[assignment]
    return terminal, told


def bells(terminal: TerminalSignals) -> int:
    return [what for _, what in terminal.sent].count("bell")


@pytest.mark.parametrize("recorded", ["before the first look", "after the first look"])
def test_a_wait_that_began_before_watch_rings_and_notifies_once(recorded: str) -> None:
    terminal, told = signals()
    terminal.opened()
    if recorded == "before the first look":
        terminal.observe([row("a", waiting=True), row("b", "completed")], (), 1)
    else:  # the first look saw it working; its wait was recorded a moment later
        terminal.observe([row("a"), row("b", "completed")], (), 0)
        terminal.observe([row("a", waiting=True)], (), 1)
    terminal.observe([row("a", waiting=True)], (), 1)  # the same wait again: nothing
    assert bells(terminal) == 1
    assert told.sent == [("needs_you", "a")]  # the ending found on opening is old news
    assert terminal.sent[-1][1] == "title orchestrate (1 waiting)"
