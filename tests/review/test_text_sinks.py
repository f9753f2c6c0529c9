"""Text that reaches a pane or a terminal: controls never act there."""

from __future__ import annotations

import io

import pytest

from app.terminal.output import for_terminal
from app.tmux.errors import TmuxCommandFailed
from app.tmux.paste import MAX_PASTE_CHARS, pasteable
from app.tui.widgets.diff_view import visible


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_paste_loses_its_controls_but_keeps_its_lines() -> None:
    assert pasteable("fix it;\r\n\tthen \x1b[201~test\x03\x7f  ") == "fix it;\n\tthen [201~test"
    with pytest.raises(TmuxCommandFailed, match="empty"):
        pasteable("\x1b\x07 \n")
    with pytest.raises(TmuxCommandFailed, match="at most"):
        pasteable("x" * (MAX_PASTE_CHARS + 1))


def test_agent_text_at_a_terminal_shows_its_controls() -> None:
    assert for_terminal("a\x1b]0;t\x07b\x9bc", Terminal()) == "a^[]0;t^Gb\\x9bc"
    assert for_terminal("a\x1bb", io.StringIO()) == "a\x1bb"  # a pipe gets the bytes as they are


def test_diff_lines_show_controls_as_pictures() -> None:
    assert visible("+\tx\x1b[2J\x00\x7f\x85") == "+   x\u241b[2J\u2400\u2421\ufffd"
    assert visible("y" * 3000).endswith("\u2026")


def test_diff_lines_cannot_reorder_code_under_review() -> None:
    """Trojan Source (CVE-2021-42574): bidi overrides and isolates in a changed line
    would draw it in another order than the one it runs in; they show as U+FFFD."""
    line = "+/*\u202e } \u2066if (isAdmin)\u2069 \u2066 begin admins only */"
    assert visible(line) == "+/*\ufffd } \ufffdif (isAdmin)\ufffd \ufffd begin admins only */"
