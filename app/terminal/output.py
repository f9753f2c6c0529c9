"""What the CLI prints for a person's terminal: agent text made harmless there.

Prompts, labels, event data and session names can come from a prompt-injected agent.
JSON is printed with such characters escaped (``\\u009b``: the same JSON, nothing a
terminal acts on); table cells show them as visible stand-ins; any other line that
may hold such text (an error that quotes a value, a log line, a diff) shows them as
escapes (``^[``, ``\\x9b``, ``\\u202e``). The TUI has its own sink
(app/tui/safe_text.py); this is the command line's.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, Final, TextIO

from bus.text import replace_hidden

KEPT: Final = "\t\n"
"""Hidden characters (``bus/text.py``) a terminal line may hold as they are."""


def json_text(text: str) -> str:
    """JSON text with every hidden character (``bus/text.py``) but tab and newline written
    as a ``\\uXXXX`` escape (a surrogate pair above U+FFFF, as JSON spells those). In
    valid JSON they can only stand inside strings, where the escape means the same."""
    return replace_hidden(text, _json_escape, keep=KEPT)


def _json_escape(char: str) -> str:
    """``char`` as JSON's ``\\uXXXX`` escape, or its surrogate pair's two escapes."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def dumps(value: Any, *, indent: int | None = None) -> str:
    """``json.dumps`` for a terminal: readable non-ASCII, hidden characters escaped."""
    return json_text(json.dumps(value, ensure_ascii=False, indent=indent))


def cell(text: str) -> str:
    """A table cell: one line, hidden characters shown as U+FFFD stand-ins."""
    return replace_hidden(" ".join(text.split()), "\ufffd")


def shown(text: str) -> str:
    """``text`` with every hidden character written as an escape a person can read:
    C0 controls as ``^X``, DEL as ``^?``, the rest as ``\\xNN`` or ``\\uNNNN``; tabs and
    newlines stay.

    >>> shown("a\\x1b]0;t\\x07b\\x9bc\\u202ed")
    'a^[]0;t^Gb\\\\x9bc\\\\u202ed'
    """
    return replace_hidden(text, _shown_escape, keep=KEPT)


def _shown_escape(char: str) -> str:
    """One hidden character as a person reads it: ``^X``, ``^?``, ``\\xNN``, ``\\uNNNN``
    or ``\\UNNNNNNNN`` (Python's spelling, so it can be pasted back)."""
    code = ord(char)
    if code < 0x20:
        return f"^{chr(code + 64)}"
    if code == 0x7F:
        return "^?"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def for_terminal(text: str, stream: TextIO | None = None) -> str:
    """``text`` for ``stream`` (default stdout): `shown` when it is a terminal, as it is
    when it is a pipe or a file (which then gets the bytes exactly)."""
    target = stream or sys.stdout
    return shown(text) if target.isatty() else text


class ShownFormatter(logging.Formatter):
    """Log lines on stderr with their hidden characters `shown`: a message may quote a
    topic, a path or a reason that came from an agent or the network."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record))
