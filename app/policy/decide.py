"""The policy's decision on one question: which rule decides, and why.

Per question (per simple command, for a shell command) the rules that match are
taken in file order and the first decides, except that a matching ``deny`` beats
an ``allow`` wherever it stands (a broad allow above a narrow deny does not undo
it). A shell command is allowed only when each of its simple commands is, and it
has no construct the splitter refuses (app/policy/shell.py); a part that a rule
denies denies the whole. A question no rule decides goes to the reviewer, if
there is one, else to the person.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from app.policy.rules import SHELL, SHELL_TOOLS, TRUST, Policy, Rule
from registry.vocabulary import Answer, DecisionSource, PolicyDecision

NO_RULE = "no rule matched"


@dataclass(frozen=True)
class Question:
    """What an agent asks: its kind, its tool, and the shell command or the file.
    ``workdir`` is the job's work tree (paths are matched relative to it); ``cwd``
    the agent shell's directory, where its relative redirections land."""

    agent: str
    tool: str
    command: str = ""
    path: str = ""
    workdir: Path | None = None
    cwd: Path | None = None

    @property
    def is_shell(self) -> bool:
        return self.tool in SHELL_TOOLS

    def to_json(self) -> dict[str, Any]:
        """The question as the reviewer reads it on stdin."""
        return {
            "agent": self.agent,
            "tool": self.tool,
            "shell": self.is_shell,
            "command": self.command,
            "path": self.path,
            "workdir": str(self.workdir) if self.workdir else "",
        }


@dataclass(frozen=True)
class Verdict:
    """The decision, who made it (None: left to the person), the rules that made it
    and a reason a person reads."""

    decision: PolicyDecision
    source: DecisionSource | None
    rules: tuple[str, ...] = ()
    reason: str = ""
    parts: tuple[str, ...] = field(default=(), compare=False)

    @property
    def answer(self) -> Answer | None:
        """The answer given to the agent; None when the person is asked."""
        return {PolicyDecision.ALLOW: Answer.YES, PolicyDecision.DENY: Answer.NO}.get(self.decision)

    @property
    def by(self) -> str:
        """Who decided, as `job why` says it: "policy rule 'tests'", "the reviewer"."""
        if self.source is DecisionSource.REVIEWER:
            return "the policy's reviewer"
        if self.rules:
            names = ", ".join(f"'{name}'" for name in self.rules)
            return f"policy rule{'s' if len(self.rules) > 1 else ''} {names}"
        return "the person"


Reviewer = Callable[[Question], tuple[PolicyDecision, str]]


def decide(policy: Policy, question: Question, reviewer: Reviewer | None = None) -> Verdict:
    """The policy's verdict on ``question``; ``reviewer`` is consulted when no rule
    decides and the policy names one (None: never, as `policy replay` does)."""
    rules = [rule for rule in policy.rules if _asks_who(rule, question)]
    if question.is_shell:
        verdict = _shell(rules, question)
    else:
        relative = relative_path(question)
        rule = first_match(rule for rule in rules if _matches_file(rule, relative))
        verdict = _of(rule) if rule else Verdict(PolicyDecision.ASK, None, (), NO_RULE)
    if verdict.reason != NO_RULE or not policy.reviewer or reviewer is None:
        return verdict
    decision, why = reviewer(question)
    source = DecisionSource.REVIEWER if decision is not PolicyDecision.ASK else None
    return Verdict(decision, source, (), why, verdict.parts)


def first_match(matching: Iterable[Rule]) -> Rule | None:
    """The rule that decides among those that match: a deny, else the first."""
    found = list(matching)
    deny = next((rule for rule in found if rule.decision is PolicyDecision.DENY), None)
    return deny or (found[0] if found else None)


def _shell(rules: list[Rule], question: Question) -> Verdict:
    from app.policy.shell import split_command  # the parser: only for a shell question

    split = split_command(question.command, question.workdir, cwd=question.cwd)
    decided = [
        (part, first_match(rule for rule in rules if _matches_command(rule, part)))
        for part in split.parts
    ]
    for part, rule in decided:
        if rule is not None and rule.decision is PolicyDecision.DENY:
            return Verdict(rule.decision, DecisionSource.POLICY, (rule.name,), part, split.parts)
    if split.problems:
        return Verdict(PolicyDecision.ASK, None, (), split.problems[0], split.parts)
    for part, rule in decided:
        if rule is not None and rule.decision is PolicyDecision.ASK:
            return Verdict(rule.decision, DecisionSource.POLICY, (rule.name,), part, split.parts)
    if any(rule is None for _, rule in decided):
        return Verdict(PolicyDecision.ASK, None, (), NO_RULE, split.parts)
    names = tuple(dict.fromkeys(rule.name for _, rule in decided if rule is not None))
    return Verdict(PolicyDecision.ALLOW, DecisionSource.POLICY, names, "", split.parts)


def _of(rule: Rule) -> Verdict:
    return Verdict(rule.decision, DecisionSource.POLICY, (rule.name,))


def _asks_who(rule: Rule, question: Question) -> bool:
    """The rule's ``agent`` and ``tool`` globs match who asks. A folder-trust question
    is never one of them (app/policy/trust.py decides it), nor a trust rule another."""
    if question.tool == TRUST or rule.tool == TRUST:
        return False
    if rule.agent is not None and not fnmatchcase(question.agent, rule.agent):
        return False
    if rule.tool is None or rule.tool == "*":
        return True
    if rule.tool == SHELL:
        return question.is_shell
    return fnmatchcase(question.tool, rule.tool)


def _matches_command(rule: Rule, part: str) -> bool:
    return rule.path is None and (rule.command is None or fnmatchcase(part, rule.command))


def _matches_file(rule: Rule, relative: str | None) -> bool:
    """A file tool's question: a rule with ``command`` is for shells; a ``path``
    glob only matches a file inside the work tree."""
    if rule.command is not None:
        return False
    if rule.path is None:
        return True
    return relative is not None and fnmatchcase(relative, rule.path)


def relative_path(question: Question) -> str | None:
    """The file a tool touches, relative to the work tree once ``..`` and symlinks
    are resolved; None when there is none or it lies outside."""
    if not question.path or question.workdir is None or "\x00" in question.path:
        return None
    workdir = Path(os.path.realpath(question.workdir))
    base = Path(os.path.realpath(question.cwd)) if question.cwd else workdir
    resolved = Path(os.path.realpath(base / os.path.expanduser(question.path)))
    if resolved == workdir or not resolved.is_relative_to(workdir):
        return None
    return resolved.relative_to(workdir).as_posix()
