"""Words shown to people, shaped by their numbers (CLI lines, build logs, the TUI)."""

from __future__ import annotations


def counted(count: int, noun: str) -> str:
    """Say "1 agent" and "2 agents": the lines read as sentences, never "1 agents"
    or "2 agent(s)".

    >>> counted(1, "file"), counted(3, "new fact")
    ('1 file', '3 new facts')
    """
    return f"{count} {noun}" + ("" if count == 1 else "s")
