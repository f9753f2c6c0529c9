"""What a fake model says, turn by turn: the script every wire API plays the same way."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Token counts the server reports for one model response, each field sent as is in
    the API's own spelling. Mind the APIs' meanings: Anthropic's ``input_tokens`` excludes
    the ``cache_read_input_tokens`` (here ``cached_input_tokens``); OpenAI's and Gemini's
    input counts include their cached part.

    Distinct defaults so a test of token counting can tell input from output and
    cached from fresh in whatever the agent writes down (all four CLIs record them
    unchanged in their transcripts).
    """

    input_tokens: int = 1200
    output_tokens: int = 40
    cached_input_tokens: int = 300
    cache_creation_input_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


SIDE_USAGE = Usage(input_tokens=50, output_tokens=8, cached_input_tokens=0)
"""What side requests (titles, routing, summaries) report: small, so tests can tell them apart."""


@dataclass(frozen=True)
class RunShell:
    """Ask to run COMMAND with the agent's own shell tool (which opens its permission dialog)."""

    command: str
    description: str = "Run the command the task needs"
    text: str = "I will run a command."
    usage: Usage = field(default_factory=Usage)
    gate: threading.Event | None = None
    """If set, the answer waits (bounded) until the test sets it: the agent stays `working`."""
    flagged: bool = False
    """Claude Code's auto mode: the server's safety check flags the call, so the agent
    blocks it (wires without such a check ignore it)."""


@dataclass(frozen=True)
class Reply:
    """Reply TEXT and end the turn."""

    text: str
    usage: Usage = field(default_factory=Usage)
    gate: threading.Event | None = None


@dataclass(frozen=True)
class Fail:
    """Answer the turn's request with an HTTP error in the API's own error shape."""

    status: int = 500
    message: str = "scripted failure"
    gate: threading.Event | None = None


Step = RunShell | Reply | Fail


class Script:
    """The steps of a conversation, one per turn request the agent sends (side requests
    such as titles do not count); past the end every request gets ``after``.

    ``Script([RunShell("touch done.txt"), Reply("Done.")])`` asks for a command, and
    answers the request that carries the tool's result with "Done.".
    ``Script([], after=Fail())`` fails every request.
    """

    def __init__(self, steps: Iterable[Step], after: Step | None = None) -> None:
        self._steps = list(steps)
        self._after: Step = after if after is not None else Reply("Nothing more to do.")
        self._lock = threading.Lock()
        self._played: list[Step] = []

    @classmethod
    def shell_then_reply(cls, command: str, text: str = "All done.") -> Script:
        """The usual test conversation: ask to run COMMAND, then reply TEXT and stop."""
        return cls([RunShell(command), Reply(text)])

    def next_step(self) -> Step:
        """The step answering the next turn request (thread-safe: requests may overlap)."""
        with self._lock:
            index = len(self._played)
            step = self._steps[index] if index < len(self._steps) else self._after
            self._played.append(step)
            return step

    @property
    def played(self) -> list[Step]:
        """The steps answered so far, in order."""
        with self._lock:
            return list(self._played)


def fill_schema(schema: Any, answers: dict[str, Any]) -> Any:
    """A value matching a JSON schema, with ``answers`` for named properties.

    Agents send side requests that must come back as JSON of a given shape (a
    session title, a complexity score, who speaks next); any valid value will do
    unless the test cares, and then it names the property in ``answers``.
    """
    if not isinstance(schema, dict):
        return "fake"
    if schema.get("enum"):
        return schema["enum"][0]
    for union in ("anyOf", "oneOf"):
        if schema.get(union):
            return fill_schema(schema[union][0], answers)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    kind = str(kind).lower() if kind else ("object" if "properties" in schema else "string")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            name: answers[name] if name in answers else fill_schema(sub, answers)
            for name, sub in properties.items()
        }
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return int(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return "fake"
