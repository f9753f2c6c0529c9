"""The one terminal emulator for agent pane output: raw bytes in, the screen as Rich Text out.

An agent's pane output is a byte stream written for a terminal: colours, cursor moves,
redraws, and questions to the terminal (device attributes, cursor position, colours,
keyboard modes) plus title changes. Replayed into the operator's terminal, the questions
are answered into the control room's input as phantom key presses. Here the bytes drive
an emulated screen (pyte) instead, and what leaves is the screen's text with SGR colours
and attributes as `rich.text.Text`: no escape sequence, no control character survives.
Questions are never answered (`write_process_input` does nothing), titles are kept apart.

Feed bytes in any chunks (`feed`, from one thread); read the current screen (`screen`) or
the scrollback plus the screen (`tail`) whenever it suits, e.g. ten times a second.
"""

from __future__ import annotations

import codecs
import copy
import itertools
import re
import unicodedata
from collections import deque
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

import pyte
from pyte import modes
from pyte.screens import Char, Margins
from rich.color import Color
from rich.style import Style
from rich.text import Text
from wcwidth import wcwidth

from bus.text import is_hidden

# The size of orchestrate's agent panes (app.tmux.driver SESSION_WIDTH x SESSION_HEIGHT):
# the log replays what was drawn for that size.
PANE_COLUMNS: Final = 200
PANE_LINES: Final = 50
HISTORY_LINES: Final = 2000
# An escape sequence longer than this is dropped (an unterminated OSC would otherwise
# swallow, and hold in memory, everything after it).
MAX_SEQUENCE_CHARS: Final = 4096
# What pyte raises on sequences it cannot take (a CSI with more parameters than its
# handler, a parameter Python cannot turn into an int, `CSI 3 K` that pyte's
# erase_in_line does not know): the sequence is dropped, as a terminal would.
MALFORMED_SEQUENCE: Final = (TypeError, ValueError, IndexError, KeyError, UnboundLocalError)
# Private modes that switch to the alternate screen (47, 1047, 1049).
_ALTERNATE_SCREEN_MODES: Final = frozenset({47, 1047, 1049})
_PLAIN_ASCII = re.compile(r"[ -~]*")
# One token of the decoded stream, each kind handled by _Stream.feed.
_TOKEN = re.compile(
    r"(?P<text>[^\x00-\x1f\x7f-\x9f]+)"
    r"|(?P<csi>\x1b\[[0-?]*[ -/]*[@-~])"
    # an OSC ends at BEL or ST, or is cut short by the next escape sequence
    r"|(?P<osc>\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c|(?=\x1b[^\\])))"
    # a DCS, SOS, PM or APC string ends at ST only (tmux passthrough doubles its ESCs)
    r"|(?P<string>\x1b[PX^_](?:[^\x1b\x9c]|\x1b[^\\])*(?:\x1b\\|\x9c))"
    r"|(?P<esc>\x1b(?:[ -/]+[0-~]|[0-OQ-WYZ\\`a-~]))"
    r"|(?P<control>[\x00-\x1a\x1c-\x1f\x7f-\x9f])"
)
# What an escape sequence cut short by the end of a chunk can look like.
_SEQUENCE_PREFIX = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b\x9c]*\x1b?|[PX^_](?:[^\x1b\x9c]|\x1b[^\\])*\x1b?"
    r"|[ -/]*)"
)
# The CSI pyte parses as the terminal means them: parameters, an optional '?', no
# intermediates.
_PYTE_CSI = re.compile(r"\x1b\[\??[0-9;:]*[@-~]")
_PYTE_ESC = re.compile(r"\x1b(?:[0-~]|[#()][0-~])")
_PYTE_CONTROLS = frozenset("\x07\x08\t\n\x0b\x0c\r")
_TITLE = re.compile(r"\x1b\][02];([^\x07\x1b\x9c]*)")
_HEX_COLOUR = re.compile(r"[0-9a-f]{6}")
# The 8-bit (C1) forms of the sequence introducers, as decoded UTF-8 (U+0090 ...): xterm
# obeys them as their 7-bit forms, so they are read as those and dropped whole (else
# a `U+009D 0;title U+009C` would drop its two controls and show "0;title" as text).
_C1_INTRODUCERS: Final[Mapping[int, str]] = {
    0x90: "\x1bP",  # DCS
    0x98: "\x1bX",  # SOS
    0x9B: "\x1b[",  # CSI
    0x9C: "\x1b\\",  # ST
    0x9D: "\x1b]",  # OSC
    0x9E: "\x1b^",  # PM
    0x9F: "\x1b_",  # APC
}
_NAMED_COLOURS: Final[Mapping[str, str]] = {
    "black": "black",
    "red": "red",
    "green": "green",
    "brown": "yellow",
    "blue": "blue",
    "magenta": "magenta",
    "cyan": "cyan",
    "white": "white",
}


class _Screen(pyte.Screen):
    """pyte's screen with a scrollback of rendered lines, an alternate screen, and text
    that can only hold printable characters."""

    def __init__(self, columns: int, lines: int, history: int) -> None:
        self.scrollback: deque[Text] = deque(maxlen=history)
        self._main_screen: tuple[Any, Any] | None = None  # (buffer, cursor) while alternate
        super().__init__(columns, lines)
        self.mode.add(modes.LNM)

    def reset(self) -> None:
        super().reset()
        # A line feed also returns the carriage: a pty turns "\n" into "\r\n" on its way
        # out (so agents' streams hold no bare "\n"), a plain text log does not.
        self.mode.add(modes.LNM)

    @property
    def alternate(self) -> bool:
        return self._main_screen is not None

    def draw(self, data: str) -> None:
        # pyte stops drawing the rest of a run at the first character of no width that
        # is not a combining mark (and at unprintable ones): drop those characters
        # instead. That also keeps control, bidi and zero-width format characters out
        # of the screen.
        if not _PLAIN_ASCII.fullmatch(data):
            data = "".join(char for char in data if _drawable(char))
        if data:
            super().draw(data)

    def index(self) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y == bottom and top == 0 and not self.alternate:
            self.scrollback.append(render_row(self.buffer.get(top, {}), self.columns))
        super().index()

    def set_mode(self, *modes_: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALTERNATE_SCREEN_MODES.intersection(modes_):
            self._enter_alternate()
        super().set_mode(*modes_, **kwargs)

    def reset_mode(self, *modes_: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALTERNATE_SCREEN_MODES.intersection(modes_):
            self._leave_alternate()
        super().reset_mode(*modes_, **kwargs)

    def _enter_alternate(self) -> None:
        if self._main_screen is None:
            self._main_screen = (self.buffer, copy.copy(self.cursor))
            self.buffer = type(self.buffer)(self.buffer.default_factory)  # type: ignore[attr-defined]
            self.dirty.update(range(self.lines))

    def _leave_alternate(self) -> None:
        if self._main_screen is not None:
            self.buffer, self.cursor = self._main_screen
            self._main_screen = None
            self.dirty.update(range(self.lines))

    def write_process_input(self, data: str) -> None:
        """Answers to the agent's terminal queries go nowhere: nobody types for it."""


class _Stream(pyte.Stream):
    """Splits the decoded stream into text, controls and whole escape sequences, and
    gives pyte only text, the controls it renders, and complete sequences it parses
    correctly. Everything else is dropped here: strings (DCS, APC, PM, SOS), OSC other
    than a title, CSI with intermediates or a `<`, `=`, `>` marker (kitty keyboard,
    XTMODKEYS, XTVERSION, DECRQM), C1 controls, an over-long or malformed sequence
    (a C1 sequence introducer counts as its 7-bit form). pyte alone would draw some of
    them as text or misread them as colours."""

    def __init__(self, screen: _Screen) -> None:
        super().__init__(screen)
        self._screen = screen
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""  # an escape sequence cut by the end of the last chunk

    def feed(self, data: bytes) -> None:  # type: ignore[override]  # bytes, as pyte.ByteStream
        text = self._pending + self._decoder.decode(data).translate(_C1_INTRODUCERS)
        self._pending = ""
        position, length = 0, len(text)
        while position < length:
            token = _TOKEN.match(text, position)
            if token is None:  # an escape sequence, complete only with what comes next?
                rest = text[position:]
                if len(rest) <= MAX_SEQUENCE_CHARS and _SEQUENCE_PREFIX.fullmatch(rest):
                    self._pending = rest
                    return
                position += 1  # a lone or broken ESC: dropped
                continue
            position = token.end()
            kind = token.lastgroup
            if kind == "text":
                self._screen.draw(token.group())
            elif kind == "osc":
                self._osc(token.group())
            elif kind in ("csi", "esc", "control"):
                self._forward(token.group(), kind)

    def _forward(self, sequence: str, kind: str) -> None:
        """Hand pyte a complete sequence it renders; drop the rest."""
        renders = {
            "csi": len(sequence) <= MAX_SEQUENCE_CHARS and _PYTE_CSI.fullmatch(sequence),
            "esc": _PYTE_ESC.fullmatch(sequence),
            "control": sequence in _PYTE_CONTROLS,
        }
        if not renders[kind]:
            return
        if kind == "csi" and ":" in sequence:  # T.416 sub-parameters (38:2::r:g:b)
            sequence = _colon_parameters(sequence)
        for char in sequence:
            try:
                self._send_to_parser(char)
            except MALFORMED_SEQUENCE:  # pyte reset its parser: the sequence is dropped
                return

    def _osc(self, sequence: str) -> None:
        """OSC 0 and 2 set the title, kept apart (`TerminalEmulator.title`); the rest
        (colour queries, hyperlinks, clipboard, notifications, agent status) are dropped."""
        match = _TITLE.match(sequence)
        if match:
            self._screen.set_title(match.group(1))


def _colon_parameters(sequence: str) -> str:
    """An SGR written with ':' sub-parameters in the ';' form pyte reads; other CSI
    sequences keep only each parameter's first field."""
    head, parameters, final = sequence[:2], sequence[2:-1], sequence[-1]
    groups = []
    for group in parameters.split(";"):
        fields = group.split(":")
        if final == "m" and fields[0] in ("38", "48") and len(fields) >= 3:
            colour = [field or "0" for field in fields[2:]]
            groups.append(";".join([fields[0], fields[1], *colour[-3:]]))
        else:
            groups.append(fields[0])
    return f"{head}{';'.join(groups)}{final}"


class TerminalEmulator:
    """A `columns` x `lines` terminal that keeps `history` lines of scrollback.

    >>> terminal = TerminalEmulator(columns=20, lines=3)
    >>> terminal.feed(b"\\x1b]0;title\\x07\\x1b[31mred\\x1b[0m plain\\x1b[c\\r\\n")
    >>> [line.plain for line in terminal.tail()]
    ['red plain']
    >>> terminal.tail()[0].spans[0].style
    Style(color=Color('red', ColorType.STANDARD, number=1))
    """

    def __init__(
        self, columns: int = PANE_COLUMNS, lines: int = PANE_LINES, history: int = HISTORY_LINES
    ) -> None:
        self._size = (columns, lines, history)
        self._screen = _Screen(columns, lines, history)
        self._stream = _Stream(self._screen)

    def reset(self) -> None:
        """Start again from an empty screen and scrollback (a log cut or skipped)."""
        self.close()
        self._screen = _Screen(*self._size)
        self._stream = _Stream(self._screen)

    def close(self) -> None:
        """Let go of the screen's cells now. pyte's screen and stream each hold a cycle
        (the buffer's default factory closes over the screen; the stream's parser is a
        generator over the stream), so a dropped emulator, with its thousands of cells,
        waited for a full garbage collection, which it made longer: one every time a
        preview moved to another pane. Emptied, only a few small objects wait."""
        screen = self._screen
        screen.buffer.clear()
        screen.scrollback.clear()
        screen._main_screen = None
        self._stream.listener = None
        self._stream._parser = None

    def feed(self, data: bytes) -> None:
        """Take more of the pane's byte stream (any chunking, even mid-character)."""
        self._stream.feed(data)

    @property
    def title(self) -> str:
        """The last title the program set (OSC 0/2), printable characters only."""
        return "".join(char for char in self._screen.title if _drawable(char))

    def screen(self) -> list[Text]:
        """Every row of the screen as it is now (for a live preview)."""
        screen = self._screen
        return [render_row(screen.buffer.get(y, {}), screen.columns) for y in range(screen.lines)]

    def tail(self, count: int | None = None) -> list[Text]:
        """The last `count` lines (None: all) of scrollback and screen, without the blank
        rows below the last written one."""
        rows = self.screen()
        while rows and not rows[-1].plain:
            rows.pop()
        scrollback = self._screen.scrollback
        if count is not None and count <= len(rows):
            return rows[len(rows) - count :]
        wanted = len(scrollback) if count is None else count - len(rows)
        skip = max(len(scrollback) - wanted, 0)
        return [*itertools.islice(scrollback, skip, None), *rows]


def render_row(row: Mapping[int, Char], columns: int) -> Text:
    """One emulated row as Text: runs of cells with one style, trailing blanks dropped."""
    text = Text(no_wrap=True, end="")
    if not row:
        return text
    run: list[str] = []
    run_key: tuple[Any, ...] | None = None
    for x in range(min(max(row) + 1, columns)):
        cell = row.get(x)
        if cell is None:
            key: tuple[Any, ...] = ("default", "default", False, False, False, False, False)
            data = " "
        else:
            key = (cell.fg, cell.bg, cell.bold, cell.italics, cell.underscore)
            key += (cell.strikethrough, cell.reverse)
            data = cell.data  # "" for the second cell of a wide character
        if key != run_key and run:
            text.append("".join(run), _style(run_key))
            run = []
        run_key = key
        run.append(data)
    if run:
        text.append("".join(run), _style(run_key))
    text.rstrip()
    return text


@lru_cache(maxsize=1024)
def _style(key: tuple[Any, ...] | None) -> Style | None:
    """The Rich style of a run of cells with pyte attributes `key` (None: default)."""
    if key is None:
        return None
    fg, bg, bold, italic, underline, strike, reverse = key
    style = Style(
        color=_colour(fg),
        bgcolor=_colour(bg),
        bold=bold or None,
        italic=italic or None,
        underline=underline or None,
        strike=strike or None,
        reverse=reverse or None,
    )
    return None if style == Style() else style


def _colour(name: str) -> Color | None:
    """A pyte colour (a name, `bright`+name, or 6 hex digits) as a Rich colour."""
    if name == "default":
        return None
    if _HEX_COLOUR.fullmatch(name):
        return Color.parse(f"#{name}")
    bright = name.startswith("bright")
    base = _NAMED_COLOURS.get(name.removeprefix("bright"))
    if base is None:
        return None
    return Color.parse(f"bright_{base}" if bright else base)


@lru_cache(maxsize=4096)
def _drawable(char: str) -> bool:
    """A character that takes room on screen, or a combining mark that joins one, and
    not hidden (``bus/text.py``): a soft hyphen or an Arabic number sign has a width
    but is a format character all the same."""
    width = wcwidth(char)
    drawn = width > 0 or (width == 0 and unicodedata.combining(char) > 0)
    return drawn and not is_hidden(char)
