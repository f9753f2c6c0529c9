"""Per-job files an agent reads (its hook settings): private, written whole."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to a file only its owner can read (prompts and settings may be private)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_CREAT
    return path


def write_json(path: Path, value: Any) -> Path:
    """``value`` as indented JSON in a private file."""
    return write_private(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
