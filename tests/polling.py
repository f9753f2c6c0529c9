"""Waiting for real parts: poll for a state with a deadline, never sleep a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable


def poll_until(condition: Callable[[], object], timeout: float = 15.0, what: str = "") -> object:
    """Poll ``condition`` until it is truthy and return its value; fail at the deadline.

    Real parts answer after a delay (tmux output, a broker restart, a pane exit):
    tests wait for the state, never for a fixed time.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.05)
