"""Where orchestrate keeps its state, resolved once per command and passed down."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bus.messages import Bus
    from registry.jobs import Registry

STATE_DIR_NAME = ".orchestrate"

# The environment variables orchestrate reads or sets, each spelled once. A pane's
# agent gets HOME_ENV, JOB_ENV, JOB_TOKEN_ENV and TMUX_SOCKET_ENV (app/agents/env.py).
ENV_PREFIX = "ORCHESTRATE_"
"""Every orchestrate variable starts so (a typo under it is reported, not ignored)."""
HOME_ENV = "ORCHESTRATE_HOME"
"""The state directory (`find_state_dir`)."""
CACHE_DIR_ENV = "ORCHESTRATE_CACHE_DIR"
"""What orchestrate can rebuild at will (`find_cache_dir`)."""
JOB_ENV = "ORCHESTRATE_JOB"
"""The job an agent pane runs: `publish` and `msg` default to it."""
JOB_TOKEN_ENV = "ORCHESTRATE_JOB_TOKEN"
"""The job's auth token, which signs its events: a secret, never logged or inherited."""
TMUX_SOCKET_ENV = "ORCHESTRATE_TMUX_SOCKET"
"""The tmux server (socket name) the agent panes live on."""
TOPIC_PREFIX_ENV = "ORCHESTRATE_TOPIC_PREFIX"
"""The MQTT topic prefix `publish` sends a remote job's events under."""
MOSQUITTO_ENV = "ORCHESTRATE_MOSQUITTO"
"""The Mosquitto binary `broker start` runs (default: the one on PATH)."""
APPROVALS_ENV = "ORCHESTRATE_APPROVALS"
"""Who answers a pane's questions (the hook reads it): the control room, or the agent's own UI."""
APPROVAL_WAIT_ENV = "ORCHESTRATE_APPROVAL_WAIT_SEC"
"""How long a hook waits for the control room's decision before the agent asks on screen."""
POLICY_ENV = "ORCHESTRATE_POLICY"
"""The approval policy file (`--policy FILE`), else <state dir>/policy.toml (app/policy/)."""
BUSY_TIMEOUT_ENV = "ORCHESTRATE_BUSY_TIMEOUT_MS"
# bus.db.BUSY_TIMEOUT_MS, not imported from there: the remote publish path never
# loads sqlite3 (tests/mqtt_jobs/test_remote_publish.py checks both).
DEFAULT_BUSY_TIMEOUT_MS = 5000
MAX_BUSY_TIMEOUT_MS = 3_600_000  # an hour: longer is a typo, not a wish


class SettingsError(Exception):
    """An environment setting orchestrate cannot use; the CLI prints it as one line, exit 1."""

    exit_code = 1


def busy_timeout_from_env(env: Mapping[str, str] | None = None) -> int:
    """How long a command waits for another process's lock on the state database:
    ORCHESTRATE_BUSY_TIMEOUT_MS (whole milliseconds, 0 to an hour), else the bus's default.

    Read once per command, before anything opens the database, so a typo is one
    line (SettingsError) rather than a traceback from somewhere deep in a command.
    """
    env = os.environ if env is None else env
    text = env.get(BUSY_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_BUSY_TIMEOUT_MS
    try:
        milliseconds = int(text)
    except ValueError:
        milliseconds = -1
    if not 0 <= milliseconds <= MAX_BUSY_TIMEOUT_MS:
        raise SettingsError(
            f"{BUSY_TIMEOUT_ENV} must be a whole number of milliseconds from 0 to "
            f"{MAX_BUSY_TIMEOUT_MS} (an hour), got {text[:24]!r}"
        )
    return milliseconds


IDLE_GRACE_ENV = "ORCHESTRATE_IDLE_GRACE_SEC"
DEFAULT_IDLE_GRACE_SEC = 30.0


def idle_grace_from_env(env: Mapping[str, str] | None = None) -> float:
    """How long an agent must stay idle after its turn before a `--done-when idle` job
    is completed: ORCHESTRATE_IDLE_GRACE_SEC (seconds, 0 to a day), else 30."""
    env = os.environ if env is None else env
    text = env.get(IDLE_GRACE_ENV, "").strip()
    if not text:
        return DEFAULT_IDLE_GRACE_SEC
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 86_400:
        raise SettingsError(f"{IDLE_GRACE_ENV} must be seconds from 0 to 86400, got {text[:24]!r}")
    return seconds


WORKTREE_ENV = "ORCHESTRATE_WORKTREE"
WORKTREE_MODES = ("off", "auto")


def worktree_mode_from_env(env: Mapping[str, str] | None = None) -> str:
    """ORCHESTRATE_WORKTREE: `auto` gives every `submit` run inside a git work tree its
    own branch and work tree (as `--worktree` does); `off` (the default) only on asking."""
    env = os.environ if env is None else env
    text = env.get(WORKTREE_ENV, "").strip().lower() or "off"
    if text not in WORKTREE_MODES:
        raise SettingsError(f"{WORKTREE_ENV} must be off or auto, got {text[:24]!r}")
    return text


BELL_ENV = "ORCHESTRATE_BELL"
TITLE_ENV = "ORCHESTRATE_TITLE"
NOTIFY_CMD_ENV = "ORCHESTRATE_NOTIFY_CMD"
SCREEN_RULES_ENV = "ORCHESTRATE_SCREEN_RULES"
"""The screen rules file to read instead of <state dir>/screen-rules.toml (user_rules.py)."""
_SWITCH_WORDS = {"on": True, "1": True, "yes": True, "true": True}
_SWITCH_WORDS |= {"off": False, "0": False, "no": False, "false": False}


def switch_from_env(name: str, env: Mapping[str, str] | None = None) -> bool:
    """An on/off setting such as ORCHESTRATE_BELL or ORCHESTRATE_TITLE: on unless
    set to off (or 0, no, false)."""
    env = os.environ if env is None else env
    text = env.get(name, "").strip().lower()
    if not text:
        return True
    if text not in _SWITCH_WORDS:
        raise SettingsError(f"{name} must be on or off, got {text[:24]!r}")
    return _SWITCH_WORDS[text]


def notify_cmd_from_env(env: Mapping[str, str] | None = None) -> str:
    """ORCHESTRATE_NOTIFY_CMD: the command run (argv words, never a shell) with a job's
    JSON on stdin when it starts waiting on a person or ends; "" for none. Checked
    where it is used (app/supervision/notify.py), so the message names the flag too."""
    env = os.environ if env is None else env
    return env.get(NOTIFY_CMD_ENV, "").strip()


def find_state_dir(
    flag: str | None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Path:
    """The state directory: --state-dir, else ORCHESTRATE_HOME, else the nearest
    `.orchestrate/` walking up from cwd (as git finds `.git`), else a new one in cwd.

    Always absolute, so panes started elsewhere reach the same registry.
    """
    env = os.environ if env is None else env
    cwd = (cwd or Path.cwd()).resolve()
    if flag:
        return Path(flag).expanduser().resolve()
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser().resolve()
    for directory in (cwd, *cwd.parents):
        candidate = directory / STATE_DIR_NAME
        if candidate.is_dir():
            return candidate
    return cwd / STATE_DIR_NAME


def find_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where orchestrate keeps what it can rebuild at will (the JVM class archive):
    ORCHESTRATE_CACHE_DIR, else $XDG_CACHE_HOME/orchestrate, else ~/.cache/orchestrate."""
    env = os.environ if env is None else env
    if env.get(CACHE_DIR_ENV):
        return Path(env[CACHE_DIR_ENV]).expanduser().resolve()
    base = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base).expanduser().resolve() / "orchestrate"


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about its environment."""

    state_dir: Path
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
    worktree: str = "off"  # "auto": submit in a git work tree gets its own (WORKTREE_ENV)

    @property
    def db_path(self) -> Path:
        return self.state_dir / "state.db"

    def open_bus(self) -> Bus:
        """The SQLite bus in this state dir (imported here, on use, to keep `--help` light)."""
        from bus.db import BusDB
        from bus.messages import Bus

        return Bus(BusDB(self.state_dir, busy_timeout_ms=self.busy_timeout_ms))

    def open_registry(self) -> Registry:
        """The registry in this state dir."""
        from registry.jobs import Registry

        return Registry.open(self.state_dir, busy_timeout_ms=self.busy_timeout_ms)
