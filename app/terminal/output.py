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
import re
import sys
from typing import Any, Final, TextIO

HIDDEN: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)
"""Characters a terminal acts on or that reorder text: controls (C0 but tab and
newline, DEL, C1), bidi controls, line and paragraph separators; and lone surrogates,
which no terminal can be sent (the write would fail)."""


def json_text(text: str) -> str:
    """JSON text with every hidden character written as a ``\\uXXXX`` escape. In valid
    JSON they can only stand inside strings, where the escape means the same."""
    return HIDDEN.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def dumps(value: Any, *, indent: int | None = None) -> str:
    """``json.dumps`` for a terminal: readable non-ASCII, hidden characters escaped."""
    return json_text(json.dumps(value, ensure_ascii=False, indent=indent))


def cell(text: str) -> str:
    """A table cell: one line, hidden characters shown as U+FFFD stand-ins."""
    return HIDDEN.sub("\ufffd", " ".join(text.split()))


def shown(text: str) -> str:
    """``text`` with every hidden character written as an escape a person can read:
    C0 controls as ``^X``, DEL as ``^?``, the rest as ``\\xNN`` or ``\\uNNNN``; tabs and
    newlines stay.

    >>> shown("a\\x1b]0;t\\x07b\\x9bc\\u202ed")
    'a^[]0;t^Gb\\\\x9bc\\\\u202ed'
    """

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        if code < 0x20:
            return f"^{chr(code + 64)}"
        if code == 0x7F:
            return "^?"
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return HIDDEN.sub(escape, text)


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
