"""A user's own screen rules, in force without a release of orchestrate.

An agent update can change a screen the day it ships; the person who sees it can
fix the rule that day. The file is ``<state dir>/screen-rules.toml``, or the one
``ORCHESTRATE_SCREEN_RULES`` names; one array of tables per agent kind::

    [[claude]]
    name = "trust"                    # claude.trust: replaces the built-in rule so named
    activity = "waiting"              # waiting | working | idle
    pattern = '(?P<question>Do you trust this folder\\?)'
    versions = ">=2.1.300"            # optional: only for these versions (PEP 440)
    lines = 20                        # optional: how many of the last lines it reads

A rule named like one of the agent's built-in rules replaces it where it stands;
any other is tried before the built-in ones (the first rule that matches wins).

A file that does not parse, or holds one rule that cannot be used, changes
nothing: all of it is left out (half a file could leave a rule's replacement
out and keep the broken original), and ``problem`` says why in one line, which
``orchestrate doctor`` prints. Never an exception: a typo in this file must not
stop supervision or the control room.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from app.agents.screen import RuleError, ScreenRule
from app.settings import SCREEN_RULES_ENV

RULES_NAME = "screen-rules.toml"


@dataclass(frozen=True)
class UserRules:
    """The rules one file adds, per agent kind; ``problem`` (one line) when it was
    left out."""

    path: Path | None
    rules: Mapping[str, tuple[ScreenRule, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    problem: str = ""

    def describe(self) -> str:
        """One line for `doctor`: where the file is, and what it adds or why not."""
        if self.path is None:
            return "screen rules: built-in only (no state dir)"
        if self.problem:
            return f"screen rules: {self.problem}; built-in rules only"
        if not self.rules:
            return f"screen rules: built-in only ({self.path} is not there)"
        counts = ", ".join(f"{kind} {len(rules)}" for kind, rules in sorted(self.rules.items()))
        return f"screen rules: {self.path} adds or replaces {counts}"


def rules_path(state_dir: Path | None, env: Mapping[str, str] | None = None) -> Path | None:
    """The file ORCHESTRATE_SCREEN_RULES names, else the state dir's."""
    env = os.environ if env is None else env
    named = env.get(SCREEN_RULES_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    return state_dir / RULES_NAME if state_dir is not None else None


def load_user_rules(state_dir: Path | None, env: Mapping[str, str] | None = None) -> UserRules:
    """The user's rules; none, with the reason, when the file cannot be used."""
    path = rules_path(state_dir, env)
    if path is None:
        return UserRules(None)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        named = (os.environ if env is None else env).get(SCREEN_RULES_ENV, "").strip()
        return UserRules(path, problem=f"{path}: no such file" if named else "")
    except OSError as exc:
        return UserRules(path, problem=f"{path}: cannot read: {exc.strerror}")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
        return UserRules(path, MappingProxyType(_rules_of(data)))
    except UnicodeDecodeError:
        return UserRules(path, problem=f"{path}: not UTF-8 text")
    except tomllib.TOMLDecodeError as exc:
        return UserRules(path, problem=f"{path}: not valid TOML: {exc}")
    except RuleError as exc:
        return UserRules(path, problem=f"{path}: {exc}")


def _rules_of(data: Mapping[str, object]) -> dict[str, tuple[ScreenRule, ...]]:
    """Every agent's rules in the file (RuleError for the first one unusable)."""
    found: dict[str, tuple[ScreenRule, ...]] = {}
    for kind, tables in data.items():
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise RuleError(f"{kind!r} must be an array of rule tables ([[{kind}]])")
        found[kind] = tuple(ScreenRule.from_config(kind, table) for table in tables)
    return found


def with_user_rules(
    built_in: tuple[ScreenRule, ...], user: tuple[ScreenRule, ...]
) -> tuple[ScreenRule, ...]:
    """``built_in`` with each user rule of the same name in its place, and the
    user's new rules first."""
    by_name = {rule.name: rule for rule in user}
    replaced = tuple(by_name.pop(rule.name, rule) for rule in built_in)
    added = tuple(rule for rule in user if rule.name in by_name)
    return (*added, *replaced)
