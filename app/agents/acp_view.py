"""The transcript an ACP job's pane shows: the agent's messages, tool calls, diffs and
plan as plain text a person can read (and answer, and type the next prompt under).

Everything the agent sends is hostile: it is written through :func:`agent_text`, the
terminal sink's ``shown`` (app/terminal/output.py: control sequences become visible
escapes) with the box-drawing rule ``─`` turned into ``-``. Lines of orchestrate's own
start with a marker no agent text can produce, so the one screen rule of the ``acp``
kind (its end-of-turn line, app/agents/acp.py) cannot be imitated by the agent.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from app.terminal.output import shown

RULE = "─"
YOUR_TURN = f"{RULE}{RULE} your turn"
"""The start of the line printed when the agent ended its turn (the screen rule's)."""
AGENT = "│ "
THOUGHT = "┊ "
MAX_DIFF_LINES = 60
STATUS_MARK = {"pending": "·", "in_progress": "…", "completed": "✓", "failed": "✗"}


def agent_text(text: str) -> str:
    """Agent text for the pane: hidden characters as escapes, ``─`` as ``-``."""
    return shown(text).replace(RULE, "-")


class Transcript:
    """Writes the session to ``out`` (the pane), one prefixed line per line of text.

    Message chunks stream in pieces; ``_open`` remembers the kind of the line left
    unfinished so that the next chunk of the same kind continues it."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._open = ""

    def note(self, text: str) -> None:
        """A line of orchestrate's own (not the agent's)."""
        self._end_line()
        self._write(f"{text}\n")

    def stream(self, marker: str, text: str) -> None:
        """A chunk of the agent's message (``AGENT``) or thought (``THOUGHT``)."""
        if self._open and self._open != marker:
            self._end_line()
        for piece in agent_text(text).splitlines(keepends=True):
            if not self._open:
                self._write(marker)
            self._write(piece)
            self._open = "" if piece.endswith("\n") else marker

    def tool(self, mark: str, tool: str, title: str, status: str = "") -> None:
        """One tool call, or a change of its status."""
        what = f"{agent_text(tool)}: " if tool else ""
        state = f" [{agent_text(status)}]" if status else ""
        self.note(f"{STATUS_MARK.get(status, mark)} {what}{agent_text(title)}{state}")

    def diff(self, path: str, old: str | None, new: str) -> None:
        """A file edit as a unified diff (difflib), cut at MAX_DIFF_LINES lines."""
        name = agent_text(path)
        lines = list(
            difflib.unified_diff(
                (old or "").splitlines(), new.splitlines(), name, name, lineterm="", n=2
            )
        )
        for line in lines[:MAX_DIFF_LINES]:
            self.note(f"  {agent_text(line)}")
        if len(lines) > MAX_DIFF_LINES:
            self.note(f"  ({len(lines) - MAX_DIFF_LINES} more diff lines)")

    def plan(self, entries: Iterable[Any]) -> None:
        """The agent's plan, one entry a line with its status."""
        self.note("plan:")
        for entry in entries:
            status = str(getattr(entry, "status", ""))
            self.note(f"  {STATUS_MARK.get(status, '·')} {agent_text(str(entry.content))}")

    def options(self, names: Sequence[str]) -> None:
        self.note("   options: " + ", ".join(agent_text(name) for name in names))

    def your_turn(self, why: str) -> None:
        """The end of a turn: the line the ``acp.idle`` screen rule reads."""
        self.note(f"{YOUR_TURN} ({agent_text(why)}): type the next prompt, Enter sends it")

    def _end_line(self) -> None:
        if self._open:
            self._write("\n")
            self._open = ""

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
