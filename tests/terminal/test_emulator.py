"""The terminal emulator against the real agents' captured pane streams: the visible text
survives, colours survive as styles, and no escape sequence other than SGR can come out."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from app.terminal.emulator import MAX_SEQUENCE_CHARS, TerminalEmulator
from tests.tui.live.xterm_everything import LAST_LINE, MARKUP, SEQUENCES
from tests.tui.live.xterm_everything import payload as xterm_payload

# The real agents' captured pane streams (copied into the repo from the measurement
# session's shared/agents/fixtures, so a fresh clone tests against them).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
STREAMS = sorted(FIXTURES.glob("*/raw*.bin"))
# Words each agent's stream shows at its end (checked against the fixtures' .txt screens).
VISIBLE = {
    "aider": ["diff> /exit", "EXIT=0"],
    "claude": ["Resume this session with:", "claude --resume", "EXIT=0"],
    "codex": ["Token usage so far", "CODEX_EXIT_STATUS=0"],
    "gemini": ["Gemini CLI v0.61.0", "Authenticated with gemini-api-key"],
}
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def terminal_bytes(lines: list[Text]) -> str:
    """What a real terminal would receive for these lines (Rich, truecolor)."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=400)
    for line in lines:
        console.print(line, soft_wrap=True)
    return out.getvalue()


def fed(data: bytes, chunk: int) -> TerminalEmulator:
    terminal = TerminalEmulator()
    for start in range(0, len(data), chunk):
        terminal.feed(data[start : start + chunk])
    return terminal


def test_every_agent_has_a_captured_stream() -> None:
    assert {path.parent.name for path in STREAMS} == set(VISIBLE), STREAMS


@pytest.mark.parametrize("stream", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_captured_stream_keeps_text_and_colour_and_nothing_else(stream: Path) -> None:
    data = stream.read_bytes()
    assert b"\x1b[c" in data or b"\x1b[6n" in data or b"\x1b[?2004h" in data  # it asks things
    terminal = fed(data, 4096)
    lines = terminal.tail()
    shown = "\n".join(line.plain for line in lines)
    for words in VISIBLE[stream.parent.name]:
        assert words in shown, (words, shown[-2000:])
    assert not CONTROL.search(shown)
    out = terminal_bytes(lines)
    assert "\x1b" in out or "nopretty" in stream.name  # colours were kept...
    assert SGR.sub("", out).count("\x1b") == 0  # ...and nothing but SGR comes out
    assert not CONTROL.search(SGR.sub("", out).replace("\n", ""))
    assert not CONTROL.search(terminal.title)


@pytest.mark.parametrize("stream", STREAMS[:4], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_any_chunking_gives_the_same_screen(stream: Path) -> None:
    """pipe-pane writes at arbitrary boundaries, even inside a sequence or a character."""
    data = stream.read_bytes()
    whole = [line.plain for line in fed(data, len(data)).tail()]
    assert [line.plain for line in fed(data, 1).tail()] == whole
    assert [line.plain for line in fed(data, 7).tail()] == whole


def test_sgr_colours_become_styles() -> None:
    terminal = TerminalEmulator(columns=40, lines=5)
    terminal.feed(b"\x1b[1;31mbold red\x1b[0m \x1b[38;5;208morange\x1b[0m ")
    terminal.feed(b"\x1b[38;2;1;2;3mrgb\x1b[0m \x1b[38:2::4:5:6mcolon\x1b[0m\r\n")
    (line,) = terminal.tail()
    styles = {line.plain[span.start : span.end]: span.style for span in line.spans}
    assert str(styles["bold red"]) == "bold red"
    assert str(styles["orange"]) == "#ff8700"
    assert str(styles["rgb"]) == "#010203"
    assert str(styles["colon"]) == "#040506"


def test_terminal_queries_and_settings_are_not_text_and_not_style() -> None:
    """DA1, CPR, XTVERSION, DECRQM, kitty keyboard, XTMODKEYS, DCS, OSC colour queries,
    hyperlinks and notifications: none shows as text, none restyles what follows."""
    queries = (
        b"\x1b[c\x1b[>0q\x1b[6n\x1b[?2026$p\x1b[?u\x1b[>1u\x1b[<u\x1b[>4;2m\x1b[>4;?m"
        b"\x1bP$qm\x1b\\\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\\x1b]11;?\x1b\\\x1b]10;?\x07"
        b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x1b]777;notify;t;b\x07\x1b]7501;state=idle\x1b\\"
        b"\x1b[?1049h\x1b[?1049l\x1b[?2004h\x1b[?1004h\x1b[ q\x1b=\x1b>\xc2\x9b6n\x9b"
    )
    terminal = TerminalEmulator(columns=40, lines=5)
    terminal.feed(queries + b"after\r\n")
    (line,) = terminal.tail()
    assert line.plain == "link\ufffdafter"  # C1 CSI read as CSI; a raw 0x9b is not UTF-8
    assert not line.spans


# What each of xterm_everything's sequences leaves between its markers: nothing, but for
# a link's text, U+FFFD for each raw C1 byte (not UTF-8), and the three letters drawn
# while another character set was selected. (DECALN, RIS, ED 3 change the whole screen.)
LEFT_BETWEEN_MARKERS = {
    "osc8": "link",
    "c1-raw-csi": "\ufffd6n\ufffdc",
    "c1-raw-osc": "\ufffd0;PWNED-TITLE",
    "c1-raw-dcs": "\ufffd$qm\ufffd",
    "c1-raw-apc-pm-sos": "\ufffdapc\ufffd\ufffdpm\ufffd\ufffdsos\ufffd",
    "c1-raw-misc": "\ufffd" * 8,
    "dec-graphics": "lqk",
    "shift-out": "lqk",
    "bidi": "aRTLbiso",
}
WHOLE_SCREEN = {"decaln", "ris", "erase-scrollback"}


@pytest.mark.parametrize(
    ("name", "sequence"),
    [(name, seq) for name, seq in SEQUENCES if name not in WHOLE_SCREEN],
    ids=[name for name, _ in SEQUENCES if name not in WHOLE_SCREEN],
)
def test_every_xterm_sequence_is_dropped_whole(name: str, sequence: str | bytes) -> None:
    """Each query, title, string, mode and C1 form xterm knows leaves no text of its own
    (8-bit C1 introducers in UTF-8 are read as their 7-bit forms, as xterm does), and
    nothing in the emulator's output is anything but text and SGR."""
    raw = sequence if isinstance(sequence, bytes) else sequence.encode()
    terminal = TerminalEmulator(columns=80, lines=5)
    terminal.feed(f"<{name}>".encode() + raw + f"</{name}>\r\n".encode())
    (line,) = terminal.tail()
    assert line.plain == f"<{name}>{LEFT_BETWEEN_MARKERS.get(name, '')}</{name}>"
    out = SGR.sub("", terminal_bytes([line]))
    assert "\x1b" not in out and not CONTROL.search(out.replace("\n", ""))


def test_the_whole_xterm_stream_leaves_its_last_lines_and_no_sequence() -> None:
    """xterm_everything's whole output, in small chunks: the markup and the last line show
    as written, and only text and SGR come out."""
    terminal = fed(xterm_payload(), 5)
    lines = terminal.tail()
    shown = [line.plain for line in lines]
    assert shown[-1] == LAST_LINE and shown[-2] == f"red {MARKUP}"
    out = SGR.sub("", terminal_bytes(lines))
    assert "\x1b" not in out and not CONTROL.search(out.replace("\n", ""))


def test_titles_are_kept_apart_and_printable() -> None:
    terminal = TerminalEmulator(columns=40, lines=5)
    terminal.feed(b"\x1b]0;\xe2\x9c\xb3 Working\x1b[c\x07text\r\n")
    assert [line.plain for line in terminal.tail()] == ["text"]
    terminal.feed(b"\x1b]2;clean \xe2\x80\xae title\x1b\\")
    assert terminal.title == "clean  title"


def test_an_endless_sequence_is_dropped_and_later_text_shows() -> None:
    terminal = TerminalEmulator(columns=40, lines=5)
    terminal.feed(b"\x1b]0;" + b"x" * (MAX_SEQUENCE_CHARS * 3))
    terminal.feed(b"\x1b[" + b"9" * (MAX_SEQUENCE_CHARS * 2) + b"m")
    terminal.feed(b"\x1b[1;2;3;4A\x1b[\xd9\xa3Avisible\r\n")  # too many parameters, Arabic digit
    assert terminal.tail()[-1].plain.endswith("visible")


def test_alternate_screen_is_left_behind_on_exit() -> None:
    terminal = TerminalEmulator(columns=40, lines=5)
    terminal.feed(b"shell prompt\r\n\x1b[?1049h\x1b[2J\x1b[Hfull screen app")
    assert terminal.tail()[0].plain == "full screen app"
    terminal.feed(b"\x1b[?1049lafter\r\n")
    assert [line.plain for line in terminal.tail()] == ["shell prompt", "after"]


def test_scrollback_and_tail_count() -> None:
    terminal = TerminalEmulator(columns=10, lines=3, history=5)
    terminal.feed(b"".join(b"line %d\r\n" % n for n in range(10)))
    assert [line.plain for line in terminal.tail()] == [f"line {n}" for n in range(3, 10)]
    assert [line.plain for line in terminal.tail(2)] == ["line 8", "line 9"]
    assert [line.plain for line in terminal.tail(4)] == [f"line {n}" for n in range(6, 10)]
    assert len(terminal.screen()) == 3
