"""What the policy would say of a question it left to the person, in one line the
inbox shows: "rule 'tests' would allow `npm test` but `rm -rf ~` asks (no rule
matches it)". The person sees why the question reached them, and which rule to
write (`A` drafts one: app/policy/draft.py).

Read per simple command, as the decision itself is (app/policy/decide.py); nothing
runs, not even the reviewer (it is a command with effects of its own).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from app.policy.decide import NO_RULE, Question, Verdict, decide
from app.policy.rules import Loaded, Policy, load_policy
from registry.vocabulary import PolicyDecision

SHOWN_CHARS = 80
"""A part of a command is cut to this in the line (the inbox shows the whole command)."""


@dataclass
class PolicyView:
    """The policy file as the control room reads it: read again whenever the file
    changes (one stat per look), so a rule `A` added, or one the person wrote in an
    editor, applies to the next question shown."""

    path: Path
    named: bool = False
    _seen: tuple[int, int] | None = None
    _loaded: Loaded | None = None

    def current(self) -> Loaded:
        try:
            stat = os.stat(self.path)
            seen: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen = None
        if self._loaded is None or seen != self._seen:
            self._loaded = load_policy(self.path, named=self.named)
            self._seen = seen
        return self._loaded

    def forget(self) -> None:
        """Read the file again at the next look (it was just written)."""
        self._loaded = None


def would_apply(loaded: Loaded, question: Question) -> str:
    """The line for a question the policy left open: which rule would decide each
    part, and what asks and why."""
    if loaded.problem is not None:
        return f"policy not applied, every question asks: {loaded.problem}"
    if loaded.policy is None:
        return f"no rule matches: there is no policy file ({loaded.path})"
    return _line(loaded.policy, question)


def _line(policy: Policy, question: Question) -> str:
    if not question.is_shell:
        return _phrase(decide(policy, question), question.tool, question.path or question.tool)
    from app.policy.shell import split_command

    split = split_command(question.command, question.workdir, cwd=question.cwd)
    phrases = [
        _phrase(decide(policy, replace(question, command=part)), "", part) for part in split.parts
    ]
    phrases += [f"{problem} asks" for problem in split.problems]
    allowed = [phrase for phrase in phrases if " would allow " in phrase]
    others = [phrase for phrase in phrases if phrase not in allowed]
    line = ", ".join(allowed)
    if others:
        line = f"{line} but {'; '.join(others)}" if line else "; ".join(others)
    whole = decide(policy, question)
    if whole.reason == NO_RULE and policy.reviewer:
        line += " (the reviewer would be asked)"
    return line or "no rule matches"


def _phrase(verdict: Verdict, tool: str, what: str) -> str:
    shown = f"{tool} `{_cut(what)}`" if tool else f"`{_cut(what)}`"
    if not verdict.rules:
        return f"{shown} asks ({verdict.reason or NO_RULE})"
    rule = verdict.rules[0]
    if verdict.decision is PolicyDecision.ASK:
        return f"{shown} asks (rule '{rule}' says ask)"
    return f"rule '{rule}' would {verdict.decision} {shown}"


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
