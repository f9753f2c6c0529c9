"""What a node tells the fleet about its host: agents and versions, slots, load.

The agents are found as `orchestrate doctor` finds them (each built-in adapter's
executable on PATH) and asked their version once per installed file
(``app.agents.versions.cached_version_line``, the cache `submit` keeps in the state
dir): an upgrade changes the file, and is then asked anew. What an agent prints for
its version is reduced to the version itself (``parse_version``): the rest of its
line is nobody's business, and could hold anything.
"""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from app.agents import built_in_adapters
from app.agents.versions import cached_version_line, parse_version
from registry.jobs import Registry
from registry.vocabulary import JobStatus

VERSION_CACHE = "agent-versions.json"
"""The version cache `submit` keeps in the state dir (app/commands/submit.py)."""
DEMO_KIND = "demo"


@dataclass(frozen=True)
class HostState:
    """One look at the host: compared between looks to announce what changed."""

    host: str
    agents: dict[str, str | None]
    slots_used: int
    load: tuple[float, float, float]

    def same_as(self, other: HostState | None) -> bool:
        """Equal but for the load, which moves all the time (it goes out each period)."""
        return other is not None and (self.host, self.agents, self.slots_used) == (
            other.host,
            other.agents,
            other.slots_used,
        )


def installed_agents(state_dir: Path) -> dict[str, str | None]:
    """Each installed built-in agent and its version (None: it would not say). The demo
    agent is orchestrate's own and always there, at orchestrate's version."""
    cache = state_dir / VERSION_CACHE
    agents: dict[str, str | None] = {}
    for adapter in built_in_adapters():
        if adapter.kind == DEMO_KIND:
            agents[DEMO_KIND] = _own_version()
            continue
        path = shutil.which(adapter.executable)
        if path is None:
            continue
        line = cached_version_line(path, cache)
        version = parse_version(line) if line else None
        agents[adapter.kind] = str(version) if version is not None else None
    return agents


def _own_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("orchestrate")
    except PackageNotFoundError:
        return None


def slots_used(registry: Registry) -> int:
    """The jobs of this node's state dir that are running now: each takes a slot."""
    return len(registry.list(status=JobStatus.RUNNING))


def host_load() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages (zeros where the system has none)."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)
    return (round(one, 2), round(five, 2), round(fifteen, 2))


def look(state_dir: Path, registry: Registry, agents: dict[str, str | None]) -> HostState:
    """The host now (``agents`` from ``installed_agents``, looked up less often)."""
    return HostState(socket.gethostname(), agents, slots_used(registry), host_load())
