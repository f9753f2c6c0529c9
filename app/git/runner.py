"""Running git: an argument list, never a shell; one environment for every call.

Every call gets ``LC_ALL=C`` (messages orchestrate parses stay English),
``GIT_TERMINAL_PROMPT=0`` (never wait on a password prompt nobody sees),
``GIT_OPTIONAL_LOCKS=0`` (a status read never takes ``index.lock`` from under an
agent working in the same tree) and ``core.hooksPath`` pointed at nothing: the
control room never runs hook scripts, which an agent can write into ``.git/hooks``.
Variables that would point git at another repository (``GIT_DIR``...) are dropped.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.git.errors import GitCommandFailed, GitNotInstalled

# Inherited from a caller that runs inside git (a hook, `git rebase -x`): they would
# redirect every command to that repository, index or object store.
_REDIRECTING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)
_FIXED_ENV = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


@dataclass(frozen=True)
class GitResult:
    """What one git process did; ``stdout`` is bytes (paths and diffs are not always UTF-8)."""

    args: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        """stdout as text, without its trailing newline."""
        return self.stdout.decode("utf-8", "replace").rstrip("\n")

    @property
    def fields(self) -> list[str]:
        """stdout split at NULs (the ``-z`` forms), empty trailing field dropped."""
        parts = self.stdout.decode("utf-8", "surrogateescape").split("\0")
        return parts[:-1] if parts and parts[-1] == "" else parts


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git process."""
    env = {key: value for key, value in os.environ.items() if key not in _REDIRECTING}
    return {**env, **_FIXED_ENV, **(extra or {})}


def run_git(
    args: Sequence[str],
    cwd: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    ok: Sequence[int] = (0,),
) -> GitResult:
    """Run ``git ARGS`` in ``cwd``; GitCommandFailed unless its exit status is in ``ok``."""
    argv = ["git", "-c", f"core.hooksPath={os.devnull}", *args]
    try:
        completed = subprocess.run(
            argv,
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env=git_env(env),
            check=False,
        )
    except FileNotFoundError as error:
        if not Path(cwd).is_dir():
            raise GitCommandFailed(f"git {args[0]}: no directory {cwd}") from error
        raise GitNotInstalled("git is not installed (no `git` on PATH)") from error
    result = GitResult(
        tuple(args),
        completed.returncode,
        completed.stdout,
        completed.stderr.decode("utf-8", "replace"),
    )
    if completed.returncode not in ok:
        raise GitCommandFailed(f"git {args[0]} failed in {cwd}: {first_line(result.stderr)}")
    return result


def first_line(text: str) -> str:
    """The first non-empty line of git's stderr, without its `fatal: ` prefix."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            for prefix in ("fatal: ", "error: "):
                line = line.removeprefix(prefix)
            return line
    return "no message"
