"""What a self-test found: one line per signal orchestrate reads from an agent, and
whether it worked with the installed version."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Signal(StrEnum):
    """The signals a self-test checks, in the order it meets them."""

    ACTIVITY = "activity"
    """The recorded activity went working -> waiting (naming the command) -> idle."""
    HOOK = "hook"
    """The agent's hooks reported into the job (`orchestrate hook`)."""
    STATUS_SEQUENCE = "status sequence"
    """The agent's OSC 7501 status sequence was read from its output."""
    TITLE = "title"
    """What the agent set as its pane title (orchestrate does not read it yet)."""
    SCREEN_RULES = "screen rules"
    """The adapter's screen rules read the dialog as waiting and the prompt as idle."""
    ANSWER_YES = "answer yes"
    """`answer yes` went in, the dialog went away and the command ran."""
    ANSWER_NO = "answer no"
    """`answer no` went in, the dialog went away and nothing ran."""


@dataclass
class Check:
    """One signal's verdict: True worked, False broke, None not used by this agent (or
    not reached because an earlier step broke)."""

    signal: Signal
    ok: bool | None = None
    detail: str = "not reached"

    @property
    def word(self) -> str:
        """ok / BROKEN / -, for the table."""
        return {True: "ok", False: "BROKEN", None: "-"}[self.ok]


@dataclass
class SelfTest:
    """One agent's self-test: where its executable is and each signal's check."""

    agent: str
    executable: str
    checks: dict[Signal, Check] = field(default_factory=dict)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        for signal in Signal:
            self.checks.setdefault(signal, Check(signal))

    def passed(self, signal: Signal, detail: str) -> None:
        """Mark ``signal`` working, unless an earlier step saw it break (that stays)."""
        if self.checks[signal].ok is not False:
            self.checks[signal] = Check(signal, True, detail)

    def broke(self, signal: Signal, detail: str) -> None:
        self.checks[signal] = Check(signal, False, detail)

    def unused(self, signal: Signal, detail: str) -> None:
        self.checks[signal] = Check(signal, None, detail)

    @property
    def broken(self) -> list[Signal]:
        """The signals that did not work, in order."""
        return [signal for signal, check in self.checks.items() if check.ok is False]

    @property
    def ok(self) -> bool:
        return not self.broken
