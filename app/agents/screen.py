"""Screen rules: named patterns over what an agent's pane shows, telling its activity.

Rules are data (an adapter's defaults, or a user's own in the agents config),
not code, so a changed agent UI or a new agent is a few lines of TOML. A rule
is a regular expression searched over the last lines of the pane text; named
groups ``question``, ``tool`` and ``command`` carry what the agent waits on,
and ``details`` patterns fill in what the main pattern did not capture.
The first rule that matches wins, so waiting rules come before working ones.
``gone_if_below`` marks a match as history: a dialog answered long ago can stay
in the lines read (a redraw after a resize leaves it in the scrollback), and what
the agent shows only once the dialog has closed, below it, says it is over.
``versions`` (a PEP 440 specifier set, ``">=2.1.300,<3"``) limits a rule to the
agent versions it was written for: agents change their screens between releases,
and a rule for the old screen must not read the new one. When the installed
version cannot be told, every rule applies (a rule left out would see nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from registry.activity import ACTIVITIES, Observation
from registry.vocabulary import Activity

SCREEN_ACTIVITIES = (Activity.WAITING, Activity.WORKING, Activity.IDLE)
DEFAULT_LINES = 20
_FIELDS = ("question", "tool", "command")
CONFIG_KEYS = ("name", "activity", "pattern", "lines", "details", "gone_if_below", "versions")
"""The keys of a rule's table: any other is a typo (``version`` for ``versions`` would
apply the rule to every version, silently)."""
_TRAILING_SPACE = re.compile(r"(?: |\\s)\+?\$$")
"""A pattern wanting a space at a line's end: tmux's capture drops trailing spaces."""


class RuleError(ValueError):
    """A screen rule that cannot be used (unknown activity, a pattern that does not compile)."""


@dataclass(frozen=True)
class ScreenRule:
    """One named pattern: when it matches the pane's last ``lines`` lines, the agent
    has ``activity``."""

    name: str
    activity: str
    pattern: str
    lines: int = DEFAULT_LINES
    details: tuple[str, ...] = ()
    gone_if_below: str = ""
    versions: str = ""
    """The agent versions it applies to (PEP 440 specifiers); empty: every version."""
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)
    compiled_details: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    compiled_gone: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    compiled_versions: SpecifierSet = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Compile once; a bad rule is refused where it is defined, not at match time."""
        if self.activity not in SCREEN_ACTIVITIES or self.activity not in ACTIVITIES:
            raise RuleError(
                f"screen rule {self.name!r}: activity must be one of "
                f"{', '.join(SCREEN_ACTIVITIES)}, not {self.activity!r}"
            )
        if _TRAILING_SPACE.search(self.pattern):
            raise RuleError(
                f"screen rule {self.name!r}: pattern wants a space at a line's end, but "
                "screen lines are read without trailing spaces (write ' ?$')"
            )
        if not 1 <= self.lines <= 500:
            raise RuleError(f"screen rule {self.name!r}: lines must be 1-500")
        try:
            object.__setattr__(self, "compiled_versions", SpecifierSet(self.versions))
        except InvalidSpecifier:
            raise RuleError(
                f"screen rule {self.name!r}: versions {self.versions!r} is not a version "
                "range (write it as '>=2.1.300' or '>=0.169,<0.172')"
            ) from None
        try:
            object.__setattr__(self, "compiled", re.compile(self.pattern, re.MULTILINE))
            object.__setattr__(
                self,
                "compiled_details",
                tuple(re.compile(text, re.MULTILINE) for text in self.details),
            )
            gone = re.compile(self.gone_if_below, re.MULTILINE) if self.gone_if_below else None
            object.__setattr__(self, "compiled_gone", gone)
        except re.error as exc:
            raise RuleError(f"screen rule {self.name!r}: bad pattern: {exc}") from None

    def applies_to(self, version: Version | None) -> bool:
        """Whether the rule is for ``version`` (None: not known, so it is)."""
        if not self.versions or version is None:
            return True
        return self.compiled_versions.contains(version, prereleases=True)

    def match(self, agent: str, text: str) -> Observation | None:
        """The observation this rule makes of ``text`` (the pane's last lines), or None."""
        found = self.compiled.search(text)
        if found is None:
            return None
        if self.compiled_gone is not None and self.compiled_gone.search(text, found.end()):
            return None  # what follows the match shows it is over (an old dialog)
        values = _named(found)
        for detail in self.compiled_details:
            extra = detail.search(text)
            if extra is not None:
                values = {**_named(extra), **values}
        return Observation(
            self.activity,
            f"screen:{self.name}",
            question=values.get("question", ""),
            tool=values.get("tool", ""),
            command=values.get("command", ""),
        )

    @classmethod
    def from_config(cls, agent: str, data: Mapping[str, Any]) -> ScreenRule:
        """A rule from the agents config or a screen rules file:
        ``{name, activity, pattern, lines?, details?, gone_if_below?, versions?}``."""
        name = data.get("name")
        pattern = data.get("pattern")
        if not isinstance(name, str) or not name or not isinstance(pattern, str):
            raise RuleError(f"agent {agent!r}: every rule needs a name and a pattern")
        unknown = [key for key in data if key not in CONFIG_KEYS]
        if unknown:
            known = ", ".join(CONFIG_KEYS)
            raise RuleError(f"screen rule {name!r}: unknown key {unknown[0]!r} (known: {known})")
        details = data.get("details", ())
        if isinstance(details, str):
            details = (details,)
        if not all(isinstance(item, str) for item in details):
            raise RuleError(f"screen rule {name!r}: details must be patterns (text)")
        lines = data.get("lines", DEFAULT_LINES)
        if type(lines) is not int:
            raise RuleError(f"screen rule {name!r}: lines must be a whole number")
        qualified = name if "." in name else f"{agent}.{name}"
        gone_if_below = data.get("gone_if_below", "")
        if not isinstance(gone_if_below, str):
            raise RuleError(f"screen rule {name!r}: gone_if_below must be a pattern (text)")
        versions = data.get("versions", "")
        if not isinstance(versions, str):
            raise RuleError(f"screen rule {name!r}: versions must be a range (text, '>=1.2')")
        activity = str(data.get("activity", ""))
        return cls(qualified, activity, pattern, lines, tuple(details), gone_if_below, versions)


def _named(found: re.Match[str]) -> dict[str, str]:
    return {
        name: value.strip()
        for name, value in found.groupdict().items()
        if name in _FIELDS and value and value.strip()
    }


def visible_text(lines: Sequence[str], count: int) -> str:
    """The last ``count`` lines that hold something, each right-stripped, joined."""
    kept = [line.rstrip() for line in lines if line.strip()]
    return "\n".join(kept[-count:])


def match_screen(
    agent: str,
    rules: Iterable[ScreenRule],
    lines: Sequence[str],
    version: Version | None = None,
) -> Observation | None:
    """The observation of the first rule for ``version`` that matches the pane's
    lines, or None."""
    for rule in rules:
        if not rule.applies_to(version):
            continue
        seen = rule.match(agent, visible_text(lines, rule.lines))
        if seen is not None:
            return seen
    return None
