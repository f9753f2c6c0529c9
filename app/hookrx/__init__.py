"""The resident hook receiver (receiver.py) and the tiny hook client (client.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from app.hookrx import client


def hook_command() -> list[str]:
    """What an agent's hook runs (its kind is added after): the client, isolated (-I:
    no PYTHON* variables, nothing from the agent's working directory on the path) and
    without site packages (-S), so it starts in a fraction of `orchestrate hook`."""
    return [sys.executable, "-I", "-S", str(Path(client.__file__).resolve())]
