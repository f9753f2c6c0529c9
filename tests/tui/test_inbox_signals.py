"""Needs-you signals of the permission inbox: a new wait rings the bell once and the
title counts, both can be turned off, the notify command runs once per change, and the
wait is aged as the table ages."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot

from app.supervision.notify import NotifyCommand
from app.tui.app import ControlRoomApp
from app.tui.needs_you import SignalSettings
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.memory_source import FIXED_NOW
from tests.tui.tui_helpers import loaded, select, wait_until

WAITING = "7b0e99a1"  # codex, waiting at startup (the demo data)
SECOND = "5f4e3d2c"  # codex, running: made to wait by some tests
WORKING = "3fa2c1d0"  # claude, running
SIZE = (120, 40)


def signal_app(fake: FakeSource, **settings: object) -> ControlRoomApp:
    return ControlRoomApp(
        fake,
        clock=fixed_clock,
        poll_interval_s=0.05,
        age_refresh_s=3600,
        signals=SignalSettings(**settings),  # type: ignore[arg-type]
    )


async def seen_again(pilot: Pilot[None], fake: FakeSource, job_id: str) -> None:
    """The job's row comes again, unchanged, in a delta of its own, once drawn."""
    app = pilot.app
    with fake.lock:
        fake.seq += 1
        fake.changed_at[job_id] = fake.seq
    polls = app.polls_applied  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: app.polls_applied > polls)  # type: ignore[attr-defined]


def sent(app: ControlRoomApp) -> list[str]:
    return [what for _, what in app.signals.sent]


async def test_a_new_wait_rings_once_and_the_title_counts(fake: FakeSource) -> None:
    """Opening with one job waiting sets the title and rings once for it (a wait found
    on opening is news: it was missed 1 run in 3); a second job starting to wait rings
    once (seen again, it does not ring again); answering both puts the title back to
    `orchestrate`."""
    app = signal_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        assert sent(app) == [
            "push title",
            "title orchestrate",
            "bell",
            "title orchestrate (1 waiting)",
        ]
        fake.emit(SECOND, "permission_required", "Bash `npm test`")
        await wait_until(pilot, lambda: "title orchestrate (2 waiting)" in sent(app))
        assert sent(app).count("bell") == 2
        await seen_again(pilot, fake, SECOND)  # the same wait, in another delta: no bell
        assert sent(app).count("bell") == 2
        await pilot.press("y")
        select(app, SECOND)
        await pilot.press("y")
        await wait_until(pilot, lambda: sent(app)[-1] == "title orchestrate")
    assert sent(app)[-1] == "pop title"


async def test_bell_and_title_can_be_turned_off(fake: FakeSource) -> None:
    app = signal_app(fake, bell=False, title=False)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        fake.emit(SECOND, "permission_required", "Bash `npm test`")
        await wait_until(pilot, lambda: len(app.main.waiting_rows) == 2)
        assert sent(app) == []


def test_the_title_is_one_sanitised_sequence() -> None:
    from app.tui.needs_you import terminal_title

    assert terminal_title("orchestrate (2 waiting)") == "\x1b]0;orchestrate (2 waiting)\x07"
    assert terminal_title("x\x07\x1b]0;evil\x1b\\") == "\x1b]0;x]0;evil\\\x07"


async def test_the_notify_command_runs_once_per_change(fake: FakeSource, tmp_path: Path) -> None:
    """A real script appending its stdin to a file: one line for the job found
    waiting, one when a job starts waiting, none for the same wait seen again, one
    when a job ends; each with its event."""
    script = tmp_path / "record.py"
    script.write_text(
        "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(sys.stdin.read() + '\\n')\n"
    )
    out = tmp_path / "out.jsonl"
    command = NotifyCommand.parse(f"{sys.executable} {script} {out}")
    app = signal_app(fake, notify=command)

    def events() -> list[tuple[str, str]]:
        if not out.exists():
            return []
        lines = [json.loads(line) for line in out.read_text().splitlines() if line]
        return [(line["event"], line["job_id"]) for line in lines]

    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        fake.emit(SECOND, "permission_required", "Bash `npm test`")
        found = [("needs_you", WAITING), ("needs_you", SECOND)]
        await wait_until(pilot, lambda: events() == found, "needs_you")
        for _ in range(3):
            await seen_again(pilot, fake, SECOND)
        fake.emit(WORKING, "completed", "all done")
        fake.emit(SECOND, "error", "tests failed")
        await wait_until(pilot, lambda: len(events()) == 4, "the two endings")
    assert events() == [*found, ("finished", WORKING), ("error", SECOND)]


@pytest.mark.parametrize("when", [FIXED_NOW, FIXED_NOW - timedelta(minutes=3)])
def test_waited_is_said_as_ages_are(when: datetime) -> None:
    from app.tui.source import JobRow
    from app.tui.widgets.inbox_panel import waited

    job = JobRow("j", "running", "codex", "s", when, when, state_since=when)
    assert waited(job, FIXED_NOW) == ("0s" if when == FIXED_NOW else "3m")
