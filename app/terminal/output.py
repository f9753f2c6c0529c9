"""What the CLI prints for a person's terminal: agent text made harmless there.

Prompts, labels, event data and session names can come from a prompt-injected agent.
JSON is printed with such characters escaped (``\\u009b``: the same JSON, nothing a
terminal acts on); table cells show them as visible stand-ins. The TUI has its own
sink (app/tui/safe_text.py); this is the command line's.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

HIDDEN: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)
"""Characters a terminal acts on or that reorder text: controls (C0 but tab and
newline, DEL, C1), bidi controls, line and paragraph separators."""


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
