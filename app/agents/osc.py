"""The `OSC 7501;state=…` status sequence Codex writes into its own output.

It travels in the pane's byte stream (tmux pipe-pane copies it into the pane
log whatever the outer terminal is), so the supervisor reads the log's new
bytes and keeps the last state seen. A sequence cut in two by a read is kept
until the rest arrives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from registry.activity import Observation
from registry.vocabulary import Activity

_SEQUENCE = re.compile(rb"\x1b\]7501;([^\x07\x1b]{0,200})(?:\x07|\x1b\\)")
_PARTIAL_MAX = 256
# state -> activity; "done" and "error" end a turn, which Codex follows with idle.
STATES = {
    "idle": Activity.IDLE,
    "working": Activity.WORKING,
    "blocked": Activity.WAITING,
    "done": Activity.IDLE,
    "error": Activity.IDLE,
    "clear": Activity.EXITED,
}


def observation_for(body: str) -> Observation | None:
    """The observation one sequence body (``state=blocked:app=codex:kind=permission``)
    makes, or None for a state it does not know."""
    fields = dict(part.partition("=")[::2] for part in body.split(":"))
    state = fields.get("state", "")
    activity = STATES.get(state)
    if activity is None:
        return None
    app = fields.get("app") or "codex"
    question = ""
    if state == "blocked":
        question = f"needs {fields.get('kind') or 'approval'}"
    elif state == "error":
        question = "the turn ended with an error"
    return Observation(activity, f"osc:{app}:{state}", question=question)


@dataclass
class StatusScanner:
    """Feeds on a stream's chunks; remembers the latest status it saw."""

    latest: Observation | None = None
    _partial: bytes = field(default=b"", repr=False)

    def feed(self, chunk: bytes) -> list[Observation]:
        """Every status in ``chunk`` (with what the last chunk left), in order."""
        data = self._partial + chunk
        found: list[Observation] = []
        end = 0
        for match in _SEQUENCE.finditer(data):
            seen = observation_for(match.group(1).decode("utf-8", "replace"))
            if seen is not None:
                found.append(seen)
            end = match.end()
        rest = data[end:]
        start = rest.rfind(b"\x1b]")  # a sequence the next chunk may finish
        if start >= 0 and len(rest) - start <= _PARTIAL_MAX:
            self._partial = rest[start:]
        else:
            self._partial = b"\x1b" if rest.endswith(b"\x1b") else b""
        if found:
            self.latest = found[-1]
        return found
