"""Words the control room shows, shaped by their numbers."""

from __future__ import annotations


def counted(count: int, noun: str) -> str:
    """Say "1 agent" and "2 agents": the screens read as sentences, never "1 agents"."""
    return f"{count} {noun}" + ("" if count == 1 else "s")
