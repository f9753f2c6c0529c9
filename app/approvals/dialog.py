"""A dialog as the screen shows it: its question, its options in order, and the
option the selection marker sits on.

A key is not an answer: Claude Code 2.1.332 turned its trust dialog from
``1. Yes, I trust this folder / 2. No, exit`` (marker on Yes) into ``No, exit /
Yes, I trust this folder`` (no numbers, marker on No), so the key that meant yes
became one that exits. What an
answer means is read from the options themselves (meaning.py), and that needs
the options first: this module reads them from the pane's screen lines. Pure
functions over text; no tmux, no agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MARKERS = "\u276f\u203a>\u25cf"
"""The selection marker: U+276F (Claude Code), U+203A (Codex), > and U+25CF (Gemini CLI)."""
LIST_MARKERS = "\u276f"
"""The marker an unnumbered list may carry (Claude Code 2.1.332's U+276F). The others
also mark the conversation's bullets, quotes and prompt, so only a numbered list is
read under them."""
BORDERS = "\u2502\u2503|"
"""Box sides a dialog may be drawn in (Gemini CLI); stripped, columns kept."""
QUESTION_LOOKBACK = 12
"""How many lines above the options the question may sit (Claude's trust dialog
puts a paragraph and a link between them)."""

_MARKED = re.compile(rf"^(?P<lead>\s*)[{re.escape(MARKERS)}]\s+(?P<text>\S.*)$")
_NUMBERED = re.compile(r"^(?P<number>\d{1,2})\.\s+(?P<text>\S.*)$")


@dataclass(frozen=True)
class Option:
    """One option of a dialog, as shown."""

    text: str
    number: str | None = None
    """The number the dialog shows before it ("1"), if any."""


@dataclass(frozen=True)
class Dialog:
    """A selection list on screen."""

    question: str
    options: tuple[Option, ...]
    selected: int
    """Index in ``options`` of the option the marker sits on."""

    @property
    def marked(self) -> Option:
        """The option Enter would choose now."""
        return self.options[self.selected]

    def seen(self) -> str:
        """The options, quoted, for a one-line refusal."""
        return ", ".join(repr(option.text) for option in self.options)


def _clean(line: str) -> str:
    """The line without its box sides: the left one becomes a space, so that
    columns (which tell an option from the text around it) stay where they were."""
    stripped = line.rstrip().rstrip(BORDERS).rstrip().rstrip(BORDERS).rstrip()
    match = re.match(rf"^(\s*)[{re.escape(BORDERS)}]", stripped)
    if match is not None:
        stripped = match.group(1) + " " + stripped[match.end() :]
    return stripped


def _column(line: str) -> int:
    """Where a line's text starts."""
    return len(line) - len(line.lstrip())


def _block(lines: list[str], at: int, column: int) -> tuple[int, int]:
    """The run of lines around ``at`` whose text starts at ``column`` (the options'
    column), as [start, end). Deeper lines below an option are its wrapped rest. In
    a numbered list every option is numbered: a line at the same column without a
    number (Codex's ``$ touch …`` above its options) is not one."""
    numbered = _NUMBERED.match(lines[at][column:]) is not None

    def option(index: int) -> bool:
        line = lines[index]
        at_column = bool(line.strip()) and _column(line) == column
        return at_column and (not numbered or _NUMBERED.match(line[column:]) is not None)

    start = at
    while start > 0 and option(start - 1):
        start -= 1
    end = at + 1
    while end < len(lines) and (
        option(end) or (lines[end].strip() and _column(lines[end]) > column)
    ):
        end += 1
    return start, end


def _options(lines: list[str], start: int, end: int, column: int) -> list[tuple[str, int]]:
    """(text, line index) of each option in the block; wrapped rests joined on."""
    found: list[tuple[str, int]] = []
    for index in range(start, end):
        text = lines[index][column:].strip()
        if _column(lines[index]) > column and found:
            found[-1] = (found[-1][0] + " " + text, found[-1][1])
        else:
            found.append((text, index))
    return found


def _numbered(texts: list[str]) -> list[Option] | None:
    """The options with their numbers when every one is numbered 1, 2, 3… in order;
    None when none is; [] when only some are (not a list this module knows)."""
    matches = [_NUMBERED.match(text) for text in texts]
    if not any(matches):
        return None
    if not all(matches):
        return []
    numbers = [int(match.group("number")) for match in matches if match]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return []
    return [
        Option(match.group("text").strip(), match.group("number")) for match in matches if match
    ]


def _question(lines: list[str], start: int) -> str:
    """The nearest line above the options that asks something, else the nearest text."""
    above = [line.strip() for line in lines[max(0, start - QUESTION_LOOKBACK) : start]]
    asking = [line for line in above if "?" in line]
    if asking:
        return asking[-1]
    texts = [line for line in above if line]
    return texts[-1] if texts else ""


def _dialog_at(lines: list[str], at: int) -> Dialog | None:
    """The selection list whose marker is on line ``at``, if it is one."""
    marked = _MARKED.match(lines[at])
    if marked is None:
        return None
    column = marked.start("text")
    lines_marker = lines[at][len(marked.group("lead"))]
    lines = [*lines[:at], " " * column + marked.group("text"), *lines[at + 1 :]]
    start, end = _block(lines, at, column)
    found = _options(lines, start, end, column)
    if len(found) < 2:
        return None
    texts = [text for text, _ in found]
    numbered = _numbered(texts)
    if numbered == []:
        return None
    if numbered is None and (
        lines_marker not in LIST_MARKERS or not all(text[0].isalnum() for text in texts)
    ):
        return None  # a prompt and its reply, not a list
    options = numbered if numbered is not None else [Option(text) for text in texts]
    selected = next(i for i, (_, index) in enumerate(found) if index == at)
    return Dialog(_question(lines, start), tuple(options), selected)


def read_dialog(screen: Sequence[str]) -> Dialog | None:
    """The lowest selection list on ``screen`` (the dialog is drawn below the
    conversation, whose prompt lines carry the same marker), or None when the
    screen shows none: a single marked line is a prompt, not a list."""
    lines = [_clean(line) for line in screen]
    for at in range(len(lines) - 1, -1, -1):
        dialog = _dialog_at(lines, at)
        if dialog is not None:
            return dialog
    return None
