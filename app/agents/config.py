"""The agents config: a user's own agent kinds and screen rules, as TOML data.

Looked up in ``<state dir>/agents.toml`` and then ``$XDG_CONFIG_HOME/orchestrate/
agents.toml`` (``~/.config/…``); the first file found wins for a kind::

    [agents.myagent]
    command = ["my-agent", "--interactive"]   # {prompt} / {prompt_file} words allowed
    deliver = "paste"                         # argv | paste | file
    done_when = "exit"                        # exit | idle
    keys = { yes = ["y", "Enter"], no = ["n", "Enter"] }

    [[agents.myagent.rules]]
    name = "ask"                               # becomes myagent.ask
    activity = "waiting"                       # waiting | working | idle
    pattern = '^(?P<question>Apply (?P<command>.+)\\?) \\[y/n\\]$'

Extra rules for a built-in kind (``[agents.aider]``) are tried before its own.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.agents.base import Keys
from app.agents.screen import RuleError, ScreenRule

CONFIG_NAME = "agents.toml"


class AgentConfigError(ValueError):
    """The agents config cannot be used; one line naming the file and what is wrong."""

    exit_code = 1


@dataclass(frozen=True)
class AgentSpec:
    """One ``[agents.NAME]`` table, checked."""

    kind: str
    command: tuple[str, ...] = ()
    deliver: str | None = None
    done_when: str | None = None
    keys: Keys | None = None
    rules: tuple[ScreenRule, ...] = field(default_factory=tuple)


def config_paths(state_dir: Path | None, env: Mapping[str, str] | None = None) -> list[Path]:
    """Where the agents config may be, most specific first."""
    env = os.environ if env is None else env
    paths = [state_dir / CONFIG_NAME] if state_dir is not None else []
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    paths.append(Path(base) / "orchestrate" / CONFIG_NAME)
    return paths


def load_specs(
    state_dir: Path | None, env: Mapping[str, str] | None = None
) -> dict[str, AgentSpec]:
    """Every agent kind the config files define (the state dir's first)."""
    specs: dict[str, AgentSpec] = {}
    for path in reversed(config_paths(state_dir, env)):
        specs.update(read_file(path))
    return specs


def read_file(path: Path) -> dict[str, AgentSpec]:
    """The kinds one config file defines; {} when there is no such file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise AgentConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AgentConfigError(f"{path}: not valid UTF-8 TOML: {exc}") from None
    agents = data.get("agents", {})
    if not isinstance(agents, dict):
        raise AgentConfigError(f"{path}: [agents] must be a table")
    try:
        return {str(kind): _spec(str(kind), table) for kind, table in agents.items()}
    except (RuleError, ValueError) as exc:
        raise AgentConfigError(f"{path}: {exc}") from None


def _spec(kind: str, table: Any) -> AgentSpec:
    if not isinstance(table, dict):
        raise ValueError(f"[agents.{kind}] must be a table")
    command = table.get("command", [])
    if isinstance(command, str) or not all(isinstance(word, str) for word in command):
        raise ValueError(f"agents.{kind}.command must be a list of words")
    deliver = table.get("deliver")
    if deliver not in (None, "argv", "paste", "file"):
        raise ValueError(f"agents.{kind}.deliver must be argv, paste or file")
    done_when = table.get("done_when")
    if done_when not in (None, "exit", "idle"):
        raise ValueError(f"agents.{kind}.done_when must be exit or idle")
    rules = table.get("rules", [])
    if not isinstance(rules, list):
        raise ValueError(f"agents.{kind}.rules must be a list of tables ([[agents.{kind}.rules]])")
    return AgentSpec(
        kind=kind,
        command=tuple(command),
        deliver=deliver,
        done_when=done_when,
        keys=_keys(kind, table.get("keys")),
        rules=tuple(ScreenRule.from_config(kind, rule) for rule in rules),
    )


def _keys(kind: str, table: Any) -> Keys | None:
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ValueError(f"agents.{kind}.keys must be a table")
    values: dict[str, tuple[str, ...]] = {}
    for name in ("yes", "no", "always", "interrupt", "exit"):
        keys = table.get(name)
        if keys is None:
            continue
        if isinstance(keys, str):
            keys = [keys]
        if not isinstance(keys, list) or not all(isinstance(key, str) and key for key in keys):
            raise ValueError(f"agents.{kind}.keys.{name} must be a list of tmux key names")
        values[name] = tuple(keys)
    return Keys(**values)
