"""Pane liveness that does not trust self-reports: working / idle / blocked / dead."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.tmux.driver import PaneStatus, TmuxDriver
from app.tmux.errors import PaneNotFound

# A y/n question at the end of the screen: "[y/n]", "(Y/n)", "[yes/no]:", ...
_YES_NO = re.compile(r"[\[(]\s*y(es)?\s*/\s*n(o)?\s*[\])]\s*[:?]?\s*$", re.IGNORECASE)
# Multi-line permission menus, as Claude Code and Codex draw them.
_MENU_QUESTION = re.compile(r"do you want to (proceed|make this edit|allow)", re.IGNORECASE)
MENU_LOOKBACK = 6


class PaneState(StrEnum):
    """What an agent pane is doing, judged from the outside."""

    WORKING = "working"
    IDLE = "idle"
    BLOCKED = "blocked"
    DEAD = "dead"


@dataclass(frozen=True)
class PaneObservation:
    """One raw read of a pane, taken by the sampler (the only part that talks to tmux)."""

    pane_id: str
    exists: bool
    dead: bool
    dead_status: int | None
    content_hash: str
    last_lines: tuple[str, ...]
    at: float


@dataclass(frozen=True)
class PaneLiveness:
    """The classification of a pane, carried from one sample to the next."""

    pane_id: str
    state: PaneState
    content_hash: str
    last_change_at: float
    sampled_at: float
    dead_status: int | None = None
    prompt_line: str | None = None


def looks_like_permission_prompt(lines: Sequence[str]) -> str | None:
    """The line that asks for y/n permission at the end of the screen, or None.

    >>> looks_like_permission_prompt(["working", "Allow edit of src/x.py? [y/n] "])
    'Allow edit of src/x.py? [y/n]'
    """
    visible = [line.rstrip() for line in lines if line.strip()]
    if not visible:
        return None
    if _YES_NO.search(visible[-1]):
        return visible[-1]
    for line in visible[-MENU_LOOKBACK:]:
        if _MENU_QUESTION.search(line):
            return line
    return None


def classify(
    observation: PaneObservation,
    previous: PaneLiveness | None,
    idle_after: float,
) -> PaneLiveness:
    """Pure rule: dead beats blocked beats working/idle.

    working: output changed since the previous sample, or within `idle_after`
    seconds of the last change; idle: unchanged for longer; blocked: a
    permission prompt is the last thing on screen; dead: gone or exited.
    """
    changed = previous is None or previous.content_hash != observation.content_hash
    last_change = observation.at if changed or previous is None else previous.last_change_at
    if not observation.exists or observation.dead:
        state = PaneState.DEAD
        prompt = None
    else:
        prompt = looks_like_permission_prompt(observation.last_lines)
        if prompt is not None:
            state = PaneState.BLOCKED
        elif changed or observation.at - last_change < idle_after:
            state = PaneState.WORKING
        else:
            state = PaneState.IDLE
    return PaneLiveness(
        pane_id=observation.pane_id,
        state=state,
        content_hash=observation.content_hash,
        last_change_at=last_change,
        sampled_at=observation.at,
        dead_status=observation.dead_status,
        prompt_line=prompt,
    )


def observe(
    driver: TmuxDriver,
    pane_id: str,
    lines: int = 40,
    now: float | None = None,
    status: PaneStatus | None = None,
) -> PaneObservation:
    """Read one pane through the driver (the impure half of liveness)."""
    at = time.time() if now is None else now
    status = status or driver.pane_status(pane_id)
    if not status.exists:
        return PaneObservation(pane_id, False, True, None, "", (), at)
    try:
        captured = tuple(driver.capture(pane_id, lines))
    except PaneNotFound:  # killed between the two reads
        return PaneObservation(pane_id, False, True, None, "", (), at)
    digest = hashlib.sha256("\n".join(captured).encode("utf-8", "replace")).hexdigest()
    return PaneObservation(pane_id, True, status.dead, status.dead_status, digest, captured, at)


class LivenessSampler:
    """Samples panes repeatedly, remembering each pane's last classification.

    The TUI and `orchestrate reconcile` hold one sampler and call `sample()`
    on a timer; a first sample of a pane counts as a change (working).
    """

    def __init__(
        self,
        driver: TmuxDriver,
        idle_after: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.driver = driver
        self.idle_after = idle_after
        self.clock = clock
        self._last: dict[str, PaneLiveness] = {}

    def sample(self, pane_ids: Iterable[str]) -> dict[str, PaneLiveness]:
        """Classify every pane in `pane_ids` now; panes not asked for are forgotten."""
        results: dict[str, PaneLiveness] = {}
        statuses = self.driver.pane_statuses(pane_ids)
        for pane_id, status in statuses.items():
            observation = observe(self.driver, pane_id, now=self.clock(), status=status)
            results[pane_id] = classify(observation, self._last.get(pane_id), self.idle_after)
        self._last = dict(results)
        return results
