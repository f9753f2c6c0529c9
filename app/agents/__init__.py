"""Agent adapters, one module per kind: claude (claude-code), codex, gemini, aider,
demo, qwen (qwen-code), acp (any ACP agent, and its presets gemini-acp and qwen-acp),
and generic for any other CLI (configured in agents.toml).

A kind's module is imported only when that kind is asked for: `orchestrate hook`
runs on an agent's critical path and loads just its own adapter.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.agents.base import AgentAdapter
    from app.agents.config import AgentSpec
    from app.agents.generic import Generic

# kind -> (module, class, aliases)
_BUILT_IN: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "claude": ("app.agents.claude", "Claude", ("claude-code",)),
    "codex": ("app.agents.codex", "Codex", ()),
    "gemini": ("app.agents.gemini", "Gemini", ()),
    "aider": ("app.agents.aider", "Aider", ()),
    "demo": ("app.agents.demo", "Demo", ()),
    "acp": ("app.agents.acp", "Acp", ()),
    "gemini-acp": ("app.agents.acp", "GeminiAcp", ()),
    "qwen": ("app.agents.qwen", "Qwen", ("qwen-code",)),
    "qwen-acp": ("app.agents.acp", "QwenAcp", ()),
}
KINDS: tuple[str, ...] = tuple(_BUILT_IN)


def built_in_kind(name: str) -> str | None:
    """The built-in kind ``name`` names (itself or an alias), else None."""
    for kind, (_module, _cls, aliases) in _BUILT_IN.items():
        if name == kind or name in aliases:
            return kind
    return None


def built_in(name: str) -> AgentAdapter | None:
    """The adapter of a built-in kind (by name or alias), else None."""
    kind = built_in_kind(name)
    if kind is None:
        return None
    module, cls, _aliases = _BUILT_IN[kind]
    adapter: AgentAdapter = getattr(importlib.import_module(module), cls)()
    return adapter


def built_in_adapters() -> list[AgentAdapter]:
    """One adapter of each built-in kind."""
    return [adapter for kind in KINDS if (adapter := built_in(kind)) is not None]


def adapter_for(
    name: str, state_dir: Path | None = None, env: Mapping[str, str] | None = None
) -> AgentAdapter:
    """The adapter for agent ``name``: a built-in kind, a kind from the agents config,
    or a generic one (which then needs the user's own command)."""
    from app.agents.config import load_specs
    from app.agents.generic import Generic
    from app.agents.user_rules import load_user_rules, with_user_rules

    specs = load_specs(state_dir, env)
    adapter = built_in(name)
    spec = specs.get(name)
    if adapter is not None:
        found: AgentAdapter = _extended(adapter, spec) if spec is not None else adapter
    elif spec is not None:
        found = _configured(spec)
    else:
        found = Generic(name)
    user = load_user_rules(state_dir, env).rules.get(found.kind, ())
    if user:  # a screen rules file: the user's fix for a changed screen, before a release
        found.screen_rules = with_user_rules(found.screen_rules, user)
    return found


def _configured(spec: AgentSpec) -> Generic:
    from app.agents.generic import Generic

    return Generic(
        spec.kind,
        command=spec.command,
        deliver=spec.deliver,  # type: ignore[arg-type]
        done_when=spec.done_when,  # type: ignore[arg-type]
        keys=spec.keys,
        rules=spec.rules,
    )


def _extended(adapter: AgentAdapter, spec: AgentSpec) -> AgentAdapter:
    """A built-in kind with the user's extra rules first (a UI changed before we did)."""
    adapter.screen_rules = (*spec.rules, *adapter.screen_rules)
    if spec.keys is not None:
        adapter.keys = spec.keys
    return adapter


__all__ = ["KINDS", "adapter_for", "built_in", "built_in_adapters", "built_in_kind"]
