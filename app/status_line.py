"""`orchestrate status --tmux`: the segment tmux's status-right shows (`⚠ 2`).

tmux runs it every status-interval, so `app.entry` sends the plain forms of the
command here before click or any other part of orchestrate is imported (about
half the cost of a whole CLI start: see README, Benchmarks). Anything else
(another option, a value it cannot check, a broken database) goes on to
the full `orchestrate status`, which reads the same way and says what is wrong
in one line.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from app.settings import ENV_PREFIX, SettingsError, busy_timeout_from_env, find_state_dir
from app.tmux.format_safe import expanded_literal
from registry.waiting_count import read_waiting_count, tmux_segment

MAX_CALM_CHARS = 40
STATE_DIR_FLAGS = ("--state-dir", "--registry-dir")


def calm_problem(text: str) -> str | None:
    """Why ``text`` cannot be the calm mark, or None."""
    if len(text) > MAX_CALM_CHARS or any(not char.isprintable() for char in text):
        return f"must be at most {MAX_CALM_CHARS} printable characters"
    return None


def open_read_only(db_path: Path, busy_timeout_ms: int) -> sqlite3.Connection | None:
    """A read-only connection to a state's database (None when it has none yet):
    reading a status never creates or migrates anything."""
    if not db_path.exists():
        return None
    conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, timeout=busy_timeout_ms / 1000)
    conn.row_factory = sqlite3.Row
    return conn


def segment(db_path: Path, busy_timeout_ms: int, calm: str) -> str:
    """The line to print. tmux expands a #() job's output as a format again, so a `#`
    in it is doubled to stay text (a `#[style]` in the calm mark stays a style)."""
    conn = open_read_only(db_path, busy_timeout_ms)
    try:
        count = read_waiting_count(conn) if conn is not None else 0
    finally:
        if conn is not None:
            conn.close()
    return expanded_literal(tmux_segment(count, calm))


def _plain_form(argv: Sequence[str]) -> tuple[str | None, str] | None:
    """(the --state-dir value, the calm mark) when ``argv`` is exactly
    `[--state-dir DIR] status --tmux [--calm TEXT]`; None for anything else."""
    words = list(argv)
    state_dir: str | None = None
    if words and words[0].partition("=")[0] in STATE_DIR_FLAGS:
        _, equals, value = words.pop(0).partition("=")
        if not equals:
            if not words:
                return None
            value = words.pop(0)
        if not value or value.startswith("-"):
            return None
        state_dir = value
    if words[:1] != ["status"]:
        return None
    rest, calm, tmux = words[1:], "", False
    while rest:
        word = rest.pop(0)
        if word == "--tmux" and not tmux:
            tmux = True
        elif word.partition("=")[0] == "--calm":
            _, equals, calm = word.partition("=")
            if not equals:
                if not rest:
                    return None
                calm = rest.pop(0)
        else:
            return None
    if not tmux or calm_problem(calm) is not None:
        return None
    return state_dir, calm


def _utf8(words: Sequence[str]) -> bool:
    try:
        for word in words:
            word.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def main(argv: Sequence[str]) -> int | None:
    """Print the segment and return 0; None to hand the command line to click."""
    form = _plain_form(argv)
    env = {key: value for key, value in os.environ.items() if key.startswith(ENV_PREFIX)}
    if form is None or not _utf8([*argv, *env.values()]):
        return None
    state_flag, calm = form
    try:
        busy_timeout_ms = busy_timeout_from_env()
        db_path = find_state_dir(state_flag) / "state.db"
        line = segment(db_path, busy_timeout_ms, calm)
    except (SettingsError, sqlite3.Error, OSError, ValueError):
        return None  # click's path says what is wrong, in one line
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 0
