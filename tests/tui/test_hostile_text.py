"""Hostile labels, details, prompts and pane output in the control room: the app keeps
running, shows the text literally, runs no action from it, and what it writes to the
operator's terminal holds no sequence other than its own cursor moves and SGR."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.tui.app import ControlRoomApp
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.stop_session import StopSessionScreen
from app.tui.source import JobRow, SessionRow
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.memory_source import FIXED_NOW
from tests.tui.tui_helpers import loaded, select, wait_until

SIZE = (160, 50)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"  # raw pane streams
RAW_STREAMS = sorted(FIXTURES.glob("*/raw*.bin"))
# markup that would crash a render, or become an action or a link
MARKUP = ["ev[/]", "[@click=app.quit]click[/]", "[link=https://evil.example]x[/link]", "[/]", "[b"]
# sequences the operator's terminal would obey or answer
ESCAPES = [
    "\x1b[c",
    "\x1b[6n",
    "\x1b]0;pwned\x07",
    "\x1b]52;c;cm0gLXJm\x07",
    "\x1b[?1049h",
    "\x1bP$qm\x1b\\",
    "\x9b6n",
]
HOSTILE_JOB = "6e6f7065"
HOSTILE_LABEL = "ev[/]"
# Textual's own output: cursor positioning and SGR; anything else came from data.
TEXTUAL_SEQUENCES = re.compile(r"\x1b\[[0-9;]*[mH]")


def terminal_output(app: ControlRoomApp) -> tuple[str, set[str]]:
    """What the app would write to the terminal for a full repaint of its screen, and
    the `@click` actions attached to anything drawn."""
    update = app.screen._compositor.render_full_update()
    actions = {
        str(segment.style.meta["@click"])
        for line in update.strips
        for strip in line
        for segment in strip
        if segment.style is not None and "@click" in segment.style.meta
    }
    return update.render_segments(app.console), actions


def assert_safe_output(app: ControlRoomApp) -> str:
    output, actions = terminal_output(app)
    foreign = TEXTUAL_SEQUENCES.sub("", output)
    assert "\x1b" not in foreign, repr(foreign[foreign.index("\x1b") - 40 :][:120])
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", foreign)
    assert not {action for action in actions if "quit" in action or "bell" in action}, actions
    return foreign


@pytest.fixture
def hostile(tmp_path: Path) -> FakeSource:
    """The demo data plus a job, a session and events made of markup and escapes, and a
    pane log holding every real agent's raw stream."""
    log = tmp_path / "pane.log"
    log.write_bytes(b"".join(path.read_bytes() for path in RAW_STREAMS))
    fake = FakeSource.seeded(pane_log=log)
    fake.pane_logs[HOSTILE_JOB] = log
    created = FIXED_NOW - timedelta(minutes=1)
    fake.add_session(SessionRow(HOSTILE_LABEL, "running", True, "ok", 1.0, HOSTILE_JOB))
    for label in [*MARKUP[1:], *(f"s{text}" for text in ESCAPES)]:
        fake.add_session(SessionRow(label, "running", True, "ok", 1.0, None))
    prompt = " ".join(MARKUP + ESCAPES)
    row = JobRow(HOSTILE_JOB, "pending", "[red]agent[/", HOSTILE_LABEL, created, created)
    fake.add_job(row, prompt)
    fake.emit(HOSTILE_JOB, "started", "[@click=app.quit]start[/]")
    for detail in [*MARKUP, *ESCAPES, "ok\n12:00:00 3fa2c1d0 #9    completed  faked"]:
        fake.emit(HOSTILE_JOB, "progress", detail)
    return fake


def make(fake: FakeSource) -> ControlRoomApp:
    return ControlRoomApp(fake, clock=fixed_clock, poll_interval_s=0.05, age_refresh_s=3600)


async def shown(pilot: Pilot[Any], app: ControlRoomApp, text: str) -> None:
    await wait_until(pilot, lambda: text in assert_safe_output(app), f"{text!r} on screen")


async def test_main_screen_shows_hostile_text_literally(hostile: FakeSource) -> None:
    """A session label `ev[/]` no longer stops the control room from starting."""
    app = make(hostile)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await shown(pilot, app, HOSTILE_LABEL)
        await shown(pilot, app, "[link=https://evil.example]x[/link]")
        await shown(pilot, app, "␛]0;pwned␇")  # the escape shown as what it is
        output = assert_safe_output(app)
        assert "ok⏎12:00:00 3fa2c1d0" in output  # a newline cannot fake an event line
        await pilot.click("#events", offset=(40, 2))
        await pilot.pause()
        assert app.is_running and app.return_code is None


async def test_dialogs_and_notices_show_hostile_text_literally(hostile: FakeSource) -> None:
    """The stop dialog names the label, a waiting job's detail is toasted: both as text."""
    app = make(hostile)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await loaded(pilot)
        select(app, HOSTILE_JOB)
        await pilot.press("S")
        await wait_until(pilot, lambda: isinstance(app.screen, StopSessionScreen), "dialog")
        await shown(pilot, app, f"Stop session {HOSTILE_LABEL}: how?")
        await pilot.press("escape")
        hostile.emit(HOSTILE_JOB, "permission_required", "[@click=app.quit]allow?[/] \x1b[6n")
        await wait_until(pilot, lambda: len(app._notifications) > 0, "the toast")
        await shown(pilot, app, "▌ [@click=app.quit]allow?[/] ␛[6n — y/n")  # the toast
        assert all(not n.markup for n in app._notifications)
        app.notify("[@click=app.quit]direct[/] \x1b]0;t\x07", markup=True)  # any caller
        await shown(pilot, app, "[@click=app.quit]direct[/] ␛]0;t␇")
        assert app.is_running


@pytest.mark.parametrize("stream", RAW_STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_raw_agent_streams_in_the_log_split_emit_no_sequence(
    tmp_path: Path, stream: Path
) -> None:
    """Each real agent's pane stream in the split log tail: its text shows, none of its
    queries, titles or modes reaches the terminal (so no phantom key comes back), and
    keys still do what they should."""
    log = tmp_path / "pane.log"
    log.write_bytes(stream.read_bytes())
    app = make(FakeSource.seeded(pane_log=log))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("l")
        tail = app.main.query_one("#log-tail")
        await wait_until(pilot, lambda: tail.line_count > 3, "the pane tail")  # type: ignore[attr-defined]
        last = next(line for line in reversed(tail.lines) if line.strip())  # type: ignore[attr-defined]
        await shown(pilot, app, last.strip()[:30])
        assert not isinstance(app.screen, JobDetailScreen)
        await pilot.press("question_mark", "escape")
        assert app.is_running and app.main.log_open


async def test_job_detail_shows_hostile_record_timeline_and_pane(hostile: FakeSource) -> None:
    """The record (prompt with markup), the timeline (details) and the pane tail."""
    app = make(hostile)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, HOSTILE_JOB)
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the detail")
        screen = app.screen
        assert isinstance(screen, JobDetailScreen)
        await wait_until(pilot, lambda: screen.detail is not None, "the record")
        await shown(pilot, app, "[@click=app.quit]click[/]")
        await shown(pilot, app, "␛[c")
        tail = screen.query_one("#detail-tail")
        await wait_until(pilot, lambda: tail.line_count > 10, "the pane tail")  # type: ignore[attr-defined]
        assert_safe_output(app)
        await pilot.press("escape")
        assert app.is_running


async def test_a_flooding_or_truncated_pane_log_is_followed(tmp_path: Path) -> None:
    """Megabytes of output are not all replayed (the tail jumps to the last part), and a
    log cut short is read again from its start."""
    log = tmp_path / "pane.log"
    log.write_bytes(b"".join(b"\x1b[32mline %d\x1b[0m\r\n" % n for n in range(200_000)))
    app = make(FakeSource.seeded(pane_log=log))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("l")
        tail = app.main.query_one("#log-tail")
        await wait_until(pilot, lambda: "line 199999" in tail.lines, "the flood's end")  # type: ignore[attr-defined]
        assert tail.line_count <= 2000  # type: ignore[attr-defined]
        log.write_bytes(b"fresh start\r\n")
        await wait_until(pilot, lambda: tail.lines == ["fresh start"], "the new log")  # type: ignore[attr-defined]
