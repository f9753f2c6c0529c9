"""Which job `y`, `n` or `a` answers: never a job that does not wait.

The selected job if it waits on a person; else the only job that waits, wherever
the cursor is; else nothing, with a line saying which jobs wait (or that none
does). A key meant for one agent's question must never land in another's pane.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from registry.vocabulary import Answer
from registry.wording import counted

LISTED = 4  # job ids named in the "which wait" line; the rest are counted


@dataclass(frozen=True)
class Target:
    """The job to answer, or (job_id None) why there is none."""

    job_id: str | None
    refusal: str = ""


def answer_target(selected: str | None, waiting: Sequence[str], reply: Answer) -> Target:
    """``waiting``: the ids of the jobs waiting on a person, in table order."""
    if selected is not None and selected in waiting:
        return Target(selected)
    if len(waiting) == 1:
        return Target(waiting[0])
    if not waiting:
        hint = " (+ starts a new job)" if reply == Answer.NO else ""
        return Target(None, f"No job is waiting for an answer{hint}")
    named = ", ".join(waiting[:LISTED]) + (
        f" and {len(waiting) - LISTED} more" if len(waiting) > LISTED else ""
    )
    return Target(
        None,
        f"{counted(len(waiting), 'job')} wait for an answer ({named}): "
        f"select one first (tab jumps to the next, w lists them)",
    )


def next_waiting(current: str | None, waiting: Sequence[str]) -> str | None:
    """The waiting job after ``current`` in ``waiting``'s order, cycling; the first
    one when ``current`` does not wait; None when nobody waits."""
    if not waiting:
        return None
    if current is None or current not in waiting:
        return waiting[0]
    return waiting[(list(waiting).index(current) + 1) % len(waiting)]
