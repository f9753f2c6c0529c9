"""Where the agent CLIs installed by scripts/setup-agents are, and which are missing.

The pinned set by default; ``ORCHESTRATE_AGENT_SET=latest`` points the same tests at the
newest versions (`scripts/setup-agents --latest`), which is how CI's drift report runs the
agent matrix a second time.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.ci import missing_part

REPO = Path(__file__).resolve().parents[2]
AGENT_SET = os.environ.get("ORCHESTRATE_AGENT_SET", "pinned")
"""Which installed set the tests drive: ``pinned`` (default) or ``latest``."""
AGENT_BIN = REPO / ".venv" / ("agent-bin-latest" if AGENT_SET == "latest" else "agent-bin")

PINNED = {
    "claude": "@anthropic-ai/claude-code@2.1.197",
    "codex": "@openai/codex@0.169.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "aider": "aider-chat@0.86.2",
    "qwen": "@qwen-code/qwen-code@0.24.4",
}
"""Each agent's package at the version scripts/setup-agents installs (keep the two in step)."""


class MissingCli(LookupError):
    """An agent CLI the tests need was not installed."""


def cli_path(agent: str) -> Path:
    """The agent's executable in AGENT_BIN: at its pinned version, or for the latest set
    whatever version `scripts/setup-agents --latest` resolved."""
    link = AGENT_BIN / agent
    target = Path(os.path.realpath(link)) if link.is_symlink() else None
    if target is None or not os.access(target, os.X_OK):
        raise MissingCli(
            f"{agent} ({PINNED[agent]}) is not installed in {AGENT_BIN}: "
            f"scripts/setup-agents{' --latest' if AGENT_SET == 'latest' else ''} could not "
            "install it (run it to see why)"
        )
    if AGENT_SET != "latest" and PINNED[agent] not in os.readlink(link):
        raise MissingCli(f"{link} is not {PINNED[agent]}: run scripts/setup-agents")
    return link


def missing() -> dict[str, str]:
    """Agent name -> why it cannot run, for every agent of the set that is not installed."""
    reasons: dict[str, str] = {}
    for agent in PINNED:
        try:
            cli_path(agent)
        except MissingCli as error:
            reasons[agent] = str(error)
    return reasons


def require(agent: str) -> Path:
    """The agent's executable; else skip the test, or fail it under CI, where a missing
    CLI means the setup broke and a skip would hide it (tests/ci.py decides)."""
    try:
        return cli_path(agent)
    except MissingCli as error:
        missing_part(str(error))
