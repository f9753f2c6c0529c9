"""Agent adapters, one module per kind: claude (claude-code), codex, gemini, aider,
demo, and generic for any other CLI (configured in agents.toml)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.agents.aider import Aider
from app.agents.base import AgentAdapter
from app.agents.claude import Claude
from app.agents.codex import Codex
from app.agents.config import AgentSpec, load_specs
from app.agents.demo import Demo
from app.agents.gemini import Gemini
from app.agents.generic import Generic

BUILT_IN: tuple[type[AgentAdapter], ...] = (Claude, Codex, Gemini, Aider, Demo)
KINDS: tuple[str, ...] = tuple(cls.kind for cls in BUILT_IN)


def built_in(name: str) -> AgentAdapter | None:
    """The adapter of a built-in kind (by name or alias), else None."""
    for cls in BUILT_IN:
        if name == cls.kind or name in cls.aliases:
            return cls()
    return None


def adapter_for(
    name: str, state_dir: Path | None = None, env: Mapping[str, str] | None = None
) -> AgentAdapter:
    """The adapter for agent ``name``: a built-in kind, a kind from the agents config,
    or a generic one (which then needs the user's own command)."""
    specs = load_specs(state_dir, env)
    adapter = built_in(name)
    spec = specs.get(name)
    if adapter is not None:
        return _extended(adapter, spec) if spec is not None else adapter
    if spec is not None:
        return _configured(spec)
    return Generic(name)


def _configured(spec: AgentSpec) -> Generic:
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


__all__ = ["KINDS", "AgentAdapter", "adapter_for", "built_in"]
