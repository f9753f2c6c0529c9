"""The environment an agent's pane runs with.

The agent needs what it has when run by hand: the submitting user's environment
(API keys, settings). Orchestrate adds its own bin directory first on PATH, the
state dir, the job and that job's token; it removes what belongs to nobody
else's pane: another job's token, the broker password, tmux's own variables.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.settings import HOME_ENV, JOB_ENV, JOB_TOKEN_ENV, TMUX_SOCKET_ENV

if TYPE_CHECKING:
    import subprocess

SECRET_NAMES = frozenset({JOB_TOKEN_ENV, "MQTT_PASSWORD"})
"""Never inherited by a pane: a job's token is given to its own pane only."""
TMUX_OWN = frozenset({"TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION"})
"""tmux sets these for each pane; the submitter's values would be wrong there."""
_DROPPED_PREFIXES = (JOB_ENV,)


def bin_dir() -> Path:
    """The directory holding this install's `orchestrate` (and python)."""
    return Path(sys.executable).parent


def pane_environment(
    submitter: Mapping[str, str],
    *,
    state_dir: Path,
    job_id: str,
    token: str | None,
    tmux_socket: str,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of a job's agent: the submitter's, made safe, plus the job's."""
    env = {
        name: value
        for name, value in submitter.items()
        if name not in SECRET_NAMES
        and name not in TMUX_OWN
        and not name.startswith(_DROPPED_PREFIXES)
    }
    path = env.get("PATH", "")
    ours = str(bin_dir())
    parts = [part for part in path.split(os.pathsep) if part and part != ours]
    env["PATH"] = os.pathsep.join([ours, *parts]) if parts else ours
    env[HOME_ENV] = str(state_dir.resolve())
    env[JOB_ENV] = job_id
    env[TMUX_SOCKET_ENV] = tmux_socket
    if token:
        env[JOB_TOKEN_ENV] = token
    env.update(extra or {})
    return env


def orchestrate_command() -> list[str]:
    """How to run this install's `orchestrate` from anywhere (hooks, the pane runner)."""
    script = bin_dir() / "orchestrate"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "app"]


def spawn_orchestrate(
    state_dir: Path, args: Sequence[str], log_path: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """Start `orchestrate --state-dir DIR ARGS` in a session of its own, detached from
    this terminal (the background supervisor, a node): it outlives the command that
    started it, and its output goes to ``log_path``, appended. (subprocess is imported
    here: this module is on the hook's path, which never spawns.)"""
    import subprocess

    log_path.parent.mkdir(parents=True, exist_ok=True)
    argv = [*orchestrate_command(), "--state-dir", str(state_dir), *args]
    with log_path.open("ab") as log:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
        )
