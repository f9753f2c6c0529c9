"""The policy file: ordered ``[[rule]]`` tables and an optional ``reviewer``, read
with tomllib and checked whole.

A file that does not parse, or holds one rule that does not check, is *broken*:
the policy then decides nothing (every question goes to the person) and the
commands that start or watch work say why (:func:`broken_policy_line`). Half a
policy is not applied: a typo in a ``deny`` rule must not leave its ``allow``
neighbours deciding alone. Unknown keys are refused for the same reason.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.settings import POLICY_ENV
from registry.vocabulary import PolicyDecision

POLICY_FILE = "policy.toml"
"""``<state dir>/policy.toml``: the policy when no ``--policy FILE`` is given."""
MAX_POLICY_BYTES = 1024 * 1024
MAX_TEXT = 1000
"""Longest name, glob or reviewer word: longer is a paste gone wrong."""
RULE_KEYS = ("name", "agent", "tool", "command", "path", "repo", "decision")
TOP_KEYS = frozenset({"rule", "reviewer", "budget"})
"""``budget`` is read by the budgets (issue 29 item 5), not by the rules."""
SHELL = "shell"
"""``tool = "shell"``: any shell command, whatever the agent calls its shell tool."""
TRUST = "trust"
"""``tool = "trust"``: the folder-trust dialog, for orchestrate's own work trees of the
repository ``repo`` names (app/policy/trust.py), and nothing else."""
SHELL_TOOLS = frozenset(
    {SHELL, "Shell", "Bash", "run_shell_command", "exec_command", "local_shell"}
)
"""The agents' names for their shell tool (Claude's Bash, Gemini's run_shell_command and
its dialog's [Shell], Codex's app-server command approval recorded as Shell): a question
from one is a shell command."""


class PolicyError(Exception):
    """The policy file cannot be used; its message is one line."""

    exit_code = 1


@dataclass(frozen=True)
class Rule:
    """One ``[[rule]]``: globs over who asks and what, and the decision. A key left
    out matches anything."""

    name: str
    decision: PolicyDecision
    agent: str | None = None
    tool: str | None = None
    command: str | None = None
    path: str | None = None
    repo: str | None = None


@dataclass(frozen=True)
class Policy:
    """The rules in file order, and the reviewer's argv (empty: none)."""

    rules: tuple[Rule, ...]
    reviewer: tuple[str, ...] = ()


@dataclass(frozen=True)
class Loaded:
    """What reading the policy file gave: a policy, none (no file), or a broken one."""

    path: Path
    policy: Policy | None
    problem: str | None = None

    @property
    def broken(self) -> bool:
        return self.problem is not None


def policy_path(state_dir: Path, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The policy file and whether it was named (``--policy``/ORCHESTRATE_POLICY): a
    named file that is missing is broken, the default one is only absent."""
    named = env.get(POLICY_ENV, "").strip()
    if named:
        return Path(named).expanduser(), True
    return state_dir / POLICY_FILE, False


def load_policy(path: Path, *, named: bool = False) -> Loaded:
    """Read and check the policy file (never raises: a problem is kept as one line)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_POLICY_BYTES + 1)
    except FileNotFoundError:
        return Loaded(path, None, f"{path} does not exist" if named else None)
    except OSError as error:
        return Loaded(path, None, f"{path} cannot be read ({error.strerror or error})")
    try:
        return Loaded(path, policy_of(raw))
    except PolicyError as error:
        return Loaded(path, None, f"{path}: {error}")


def policy_of(raw: bytes) -> Policy:
    """The policy a file's bytes hold; PolicyError (one line) for the first thing wrong."""
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(f"it is over {MAX_POLICY_BYTES} bytes")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PolicyError("it is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(f"it is not TOML: {error}") from None
    return parse_policy(data)


def parse_policy(data: Mapping[str, Any]) -> Policy:
    """A TOML document as a policy; PolicyError (one line) for the first thing wrong."""
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise PolicyError(f"unknown key {unknown[0]!r} (known: rule, reviewer)")
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        raise PolicyError("rule must be [[rule]] tables")
    rules = tuple(_rule(index, table) for index, table in enumerate(tables, 1))
    names = [rule.name for rule in rules]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise PolicyError(f"two rules are named {twice!r}")
    return Policy(rules, _reviewer(data.get("reviewer")))


def _rule(index: int, table: object) -> Rule:
    where = f"rule {index}"
    if not isinstance(table, dict):
        raise PolicyError(f"{where} must be a table")
    unknown = sorted(set(table) - set(RULE_KEYS))
    if unknown:
        raise PolicyError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(RULE_KEYS)})")
    values: dict[str, str] = {}
    for key, value in table.items():
        if not isinstance(value, str) or not value.strip():
            raise PolicyError(f"{where}: {key} must be non-empty text")
        if len(value) > MAX_TEXT or not value.isprintable():
            raise PolicyError(f"{where}: {key} must be printable text of {MAX_TEXT} at most")
        values[key] = value
    if "name" not in values:
        raise PolicyError(f"{where} has no name")
    where = f"rule {values['name']!r}"
    try:
        decision = PolicyDecision(values.get("decision", ""))
    except ValueError:
        raise PolicyError(f"{where}: decision must be allow, deny or ask") from None
    tool = values.get("tool")
    if "command" in values and tool not in (None, "*") and tool not in SHELL_TOOLS:
        raise PolicyError(f'{where}: command is for shell rules (tool = "shell")')
    if "path" in values and tool in SHELL_TOOLS:
        raise PolicyError(f"{where}: path is for file tools, not tool = {tool!r}")
    if (tool == TRUST) != ("repo" in values):
        raise PolicyError(f'{where}: tool = "trust" and repo go together (repo = "~/src/app")')
    if tool == TRUST and ("command" in values or "path" in values):
        raise PolicyError(f"{where}: a trust rule names a repo only, no command or path")
    return Rule(
        name=values["name"],
        decision=decision,
        agent=values.get("agent"),
        tool=tool,
        command=values.get("command"),
        path=values.get("path"),
        repo=values.get("repo"),
    )


def _reviewer(value: object) -> tuple[str, ...]:
    """The reviewer as argv: a list of words, or one string split as a shell would
    split it (it is never run by a shell)."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as error:
            raise PolicyError(f"reviewer cannot be split into words: {error}") from None
    elif isinstance(value, list) and all(isinstance(word, str) for word in value):
        argv = list(value)
    else:
        raise PolicyError("reviewer must be a command (text) or a list of words")
    if not argv or any(len(word) > MAX_TEXT or "\x00" in word for word in argv):
        raise PolicyError("reviewer must name a command")
    return tuple(argv)


def broken_policy_line(state_dir: Path, env: Mapping[str, str]) -> str | None:
    """One line for `watch`, `submit` and `doctor` when the policy is broken: what is
    wrong, and that every question asks until it is fixed; None otherwise."""
    path, named = policy_path(state_dir, env)
    loaded = load_policy(path, named=named)
    if loaded.problem is None:
        return None
    return f"policy not applied, every question asks: {loaded.problem}"
