"""Helpers for the control room's tests. Its fixtures (a private tmux server, a state
dir, an Orchestrator) are shared by every tier: ``tests/plugin``."""

from __future__ import annotations

import sys

PYTHON = sys.executable


def demo_cmd(*flags: str) -> list[str]:
    """The demo agent, fast (0.05 s steps), with extra flags; the prompt comes as a path."""
    return [PYTHON, "-m", "app.agents.demo_cli", "--steps", "2", "--delay", "0.05", *flags]


def demo_cmd_text(*flags: str) -> str:
    """`demo_cmd` as the shell-like string `--agent-cmd` takes."""
    return " ".join([*demo_cmd(*flags), "{prompt_file}"])
