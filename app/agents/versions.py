"""The agent versions an adapter is tested on, and a one-line warning outside them.

Agents change their dialogs and screens without notice (Claude Code 2.1.332 reversed its
folder-trust dialog: Enter now exits). An adapter declares the range its keys, hooks and
screen rules were tested on: the version scripts/setup-agents pins, up to the newest that
passed CI's drift run. `orchestrate doctor` and `orchestrate submit` say so when the
installed agent is outside it, so a person learns it before an answer goes wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

VERSION_WORD = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)*(?:[-.+]?[0-9A-Za-z.]+)?)")
"""A version in what ``--version`` prints: ``2.1.197 (Claude Code)``, ``codex-cli 0.169.0``,
``aider 0.86.2``."""
VERSION_TIMEOUT_SEC = 10.0
VERSION_CACHE = "agent-versions.json"
"""The state dir's cache of agents' --version lines (submit and supervision read it)."""


@dataclass(frozen=True)
class TestedVersions:
    """The versions from ``oldest`` to ``newest`` (both tested) an adapter works with."""

    oldest: str
    newest: str

    def __contains__(self, version: Version) -> bool:
        return Version(self.oldest) <= version <= Version(self.newest)

    def __str__(self) -> str:
        return self.oldest if self.oldest == self.newest else f"{self.oldest} to {self.newest}"


def parse_version(text: str) -> Version | None:
    """The first version in a ``--version`` line (None when it holds none)."""
    for found in VERSION_WORD.finditer(text):
        try:
            return Version(found.group(1).rstrip("."))
        except InvalidVersion:
            continue
    return None


def version_line(executable: str) -> str | None:
    """The first line ``EXECUTABLE --version`` prints (None when it cannot run)."""
    try:
        result = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_SEC,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def cached_version_line(executable: str, cache: Path) -> str | None:
    """``version_line``, remembered in ``cache`` (a JSON file) per real path, size and
    modification time: Gemini CLI takes seconds to say its version, and submit asks on
    every job. An upgrade changes the file (or, for npm, the path), so it is asked anew."""
    try:
        real = os.path.realpath(executable)
        stat = os.stat(real)
    except OSError:
        return version_line(executable)
    key = f"{real}:{stat.st_size}:{stat.st_mtime_ns}"
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if isinstance(known.get(key), str):
        return str(known[key])
    line = version_line(executable)
    if line is not None:
        known[key] = line
        try:  # replaced whole, so a concurrent submit reads the old file or the new one
            with tempfile.NamedTemporaryFile(
                "w", dir=cache.parent, prefix=cache.name, delete=False, encoding="utf-8"
            ) as file:
                json.dump(known, file)
            os.replace(file.name, cache)
        except OSError:
            pass  # no cache (a read-only state dir): asked again next time
    return line


def untested_warning(
    name: str, tested: TestedVersions | None, version_text: str | None
) -> str | None:
    """The warning line when ``version_text`` names a version outside ``tested``; None
    when it is inside, or when either is unknown (nothing to say for sure)."""
    if tested is None or version_text is None:
        return None
    version = parse_version(version_text)
    if version is None or version in tested:
        return None
    return (
        f"orchestrate: warning: {name} {version} is not a version orchestrate is tested on "
        f"({tested}): its dialogs or status may be misread (`orchestrate doctor` says more)"
    )


def installed_version(
    executable: str, argv: Sequence[str] | None = None, cache: Path | None = None
) -> Version | None:
    """The version of the agent a job runs: its ``executable`` on PATH, or the user's
    own command when that is the same program (another command is never run to ask:
    it may not know ``--version``, or do something else with it). None when it
    cannot be told. With ``cache``, remembered there (see ``cached_version_line``)."""
    line = job_version_line(executable, argv, cache)
    return parse_version(line) if line is not None else None


def job_version_line(executable: str, argv: Sequence[str] | None, cache: Path | None) -> str | None:
    """The ``--version`` line of the program a job runs, when it is the adapter's own
    ``executable`` (by name) and on PATH; None otherwise."""
    program = argv[0] if argv else executable
    if Path(program).name != executable:
        return None
    path = shutil.which(program)
    if path is None:
        return None
    return cached_version_line(path, cache) if cache else version_line(path)


def launch_warning(
    kind: str,
    executable: str,
    tested: TestedVersions | None,
    argv: Sequence[str] | None,
    cache: Path | None = None,
) -> str | None:
    """The warning for the agent a job will run: its ``executable`` on PATH, or the user's
    own command when that is the same program. Another command is never run to ask its
    version: it may not know ``--version``, or do something else with it. With ``cache``,
    a version once asked is remembered there (see ``cached_version_line``)."""
    if tested is None:
        return None
    return untested_warning(kind, tested, job_version_line(executable, argv, cache))
