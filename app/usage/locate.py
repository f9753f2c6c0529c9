"""Where a job's agent wrote its transcript, found only where that CLI writes one.

A path is never taken from the agent or a hook: it is looked for under the CLI's own
directories (its config dir from the environment, else the default under HOME, and
the job's own dir) by the conversation id orchestrate gave the agent or learned
from it, which must look like one (a UUID: nothing a glob could read as a
pattern). What is found must resolve, symlinks followed, to a regular file inside
one of those directories. The file is only ever read, by Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from app.agents import built_in_kind

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MAX_TRANSCRIPT_BYTES = 512 << 20  # past this it is not read (a transcript gone wrong)


@dataclass(frozen=True)
class Transcript:
    """A job's transcript: the agent kind that wrote it and where."""

    kind: str
    path: Path


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home()).expanduser()


def _roots(kind: str, env: Mapping[str, str], job_dir: Path) -> list[Path]:
    """The directories ``kind`` writes its transcripts under, its own first."""

    def configured(name: str, default: Path) -> list[Path]:
        given = env.get(name)
        return [Path(given).expanduser(), default] if given else [default]

    home = _home(env)
    if kind == "claude":
        return configured("CLAUDE_CONFIG_DIR", home / ".claude")
    if kind == "codex":
        return configured("CODEX_HOME", home / ".codex")
    if kind == "gemini":
        user = [Path(p) / ".gemini" for p in (env.get("GEMINI_CLI_HOME"), home) if p]
        return [job_dir / "gemini-home" / ".gemini", *user]
    if kind == "aider":
        return [job_dir]
    return []


def _candidates(kind: str, root: Path, session_id: str | None) -> Iterator[Path]:
    if kind == "aider":
        yield root / "aider.chat.history.md"
        return
    if session_id is None:
        return
    if kind == "claude":
        yield from root.glob(f"projects/*/{session_id}.jsonl")
    elif kind == "codex":
        yield from root.glob(f"sessions/*/*/*/rollout-*-{session_id}.jsonl")
    elif kind == "gemini":
        yield from root.glob(f"tmp/*/chats/session-*-{session_id[:8]}.jsonl")


def _inside(path: Path, roots: list[Path]) -> bool:
    """Whether ``path`` resolves to a regular file under one of ``roots`` (resolved),
    of a size worth reading."""
    try:
        real = path.resolve(strict=True)
        if not real.is_file() or real.stat().st_size > MAX_TRANSCRIPT_BYTES:
            return False
    except OSError:
        return False
    for root in roots:
        try:
            if real.is_relative_to(root.resolve(strict=True)):
                return True
        except OSError:
            continue
    return False


def _gemini_session(path: Path) -> str | None:
    """The ``sessionId`` on the first line of a Gemini chat file."""
    import json

    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            first = json.loads(handle.readline() or "{}")
    except (OSError, ValueError):
        return None
    value = first.get("sessionId") if isinstance(first, dict) else None
    return value if isinstance(value, str) else None


def find_transcript(
    agent: str, session_id: str | None, job_dir: Path, env: Mapping[str, str]
) -> Transcript | None:
    """The transcript of a job run by ``agent`` (its kind or alias), or None when that
    kind keeps none orchestrate can read, or none is found where it should be."""
    kind = built_in_kind(agent)
    if kind is None or kind == "demo":
        return None
    if session_id is not None and not UUID.fullmatch(session_id):
        session_id = None
    roots = _roots(kind, env, job_dir)
    for root in roots:
        # the job's own dir, then the config the CLI was given, then its default
        found = [p for p in _candidates(kind, root, session_id) if _inside(p, roots)]
        if kind == "gemini":
            found = [p for p in found if _gemini_session(p) == session_id]
        if found:
            newest = max(found, key=lambda p: p.stat().st_mtime_ns)
            return Transcript(kind, newest)
    return None


TRANSCRIPT_ENV_KEYS = ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
"""The variables that say where a CLI writes its transcript (directories only, no secret)."""
TRANSCRIPT_ENV_FILE = "transcript-env.json"


def save_transcript_env(job_dir: Path, env: Mapping[str, str]) -> None:
    """Keep where the job's agent writes its transcript, from the environment it was
    started with: the supervisor reading its spend runs with another environment."""
    import json

    from app.agents.settings_files import write_private

    kept = {key: env[key] for key in TRANSCRIPT_ENV_KEYS if env.get(key)}
    job_dir.mkdir(parents=True, exist_ok=True)
    write_private(job_dir / TRANSCRIPT_ENV_FILE, json.dumps(kept, sort_keys=True) + "\n")


def transcript_env(job_dir: Path, fallback: Mapping[str, str]) -> Mapping[str, str]:
    """The environment the job's agent was started with, as far as its transcript's
    place goes (``fallback`` for a job started before this was kept)."""
    import json

    try:
        data = json.loads((job_dir / TRANSCRIPT_ENV_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return fallback
    if not isinstance(data, dict):
        return fallback
    return {k: v for k, v in data.items() if k in TRANSCRIPT_ENV_KEYS and isinstance(v, str)}
