"""Bring the registry's record of token usage up to date from the agents' transcripts.

`history build` runs this before it reads the bus: every job of a CLI that keeps a
transcript (Claude Code, Codex, Gemini CLI, Aider) has its transcript found
(``locate``), read (``transcripts``) and its model messages recorded as
``job.usage`` (``registry.usage``: a message already recorded is not recorded
again). A transcript unchanged since the last sync (size and mtime, in
``history/usage-sync.json``) is not read again, and a job that had ended when it
was read is not looked at again until it runs again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.usage.locate import Transcript, find_transcript
from app.usage.transcripts import aider_usage, claude_usage, codex_usage, gemini_usage
from registry.errors import RegistryError
from registry.jobs import Registry
from registry.records import Job
from registry.usage import ModelUsage, record_usage
from registry.vocabulary import FINAL_JOB_STATUSES

READERS: dict[str, Callable[[list[str]], list[ModelUsage]]] = {
    "claude": claude_usage,
    "codex": codex_usage,
    "gemini": gemini_usage,
    "aider": aider_usage,
}
SOURCES = {"claude": "Claude Code transcript", "codex": "Codex rollout",
           "gemini": "Gemini CLI chat", "aider": "Aider chat history"}  # fmt: skip


@dataclass(frozen=True)
class Synced:
    """What one sync did."""

    transcripts: int  # read
    recorded: int  # new model messages recorded
    skipped: int  # jobs whose transcript was not found or could not be read


def _cache_path(state_dir: Path) -> Path:
    return state_dir / "history" / "usage-sync.json"


def _load_cache(state_dir: Path) -> dict[str, Any]:
    try:
        value = json.loads(_cache_path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _save_cache(state_dir: Path, cache: dict[str, Any]) -> None:
    path = _cache_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(cache, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read_transcript(transcript: Transcript) -> list[ModelUsage]:
    """The model messages of one transcript (undecodable bytes replaced)."""
    with transcript.path.open(encoding="utf-8", errors="replace") as handle:
        return READERS[transcript.kind](list(handle))


def sync_usage(registry: Registry, state_dir: Path, env: Mapping[str, str]) -> Synced:
    """Record what every job's transcript adds (see the module docstring)."""
    cache = _load_cache(state_dir)
    read = recorded = skipped = 0
    for job in registry.list():
        seen = cache.get(job.job_id)
        if isinstance(seen, dict) and seen.get("ended") and seen.get("end") == job.completed_at:
            continue  # read after it ended, and it has not run since
        job_dir = state_dir / "logs" / job.job_id
        transcript = find_transcript(job.agent, job.agent_session_id, job_dir, env)
        if transcript is None:
            continue
        try:
            stat = transcript.path.stat()
            mark = [str(transcript.path), stat.st_size, stat.st_mtime_ns]
            if not (isinstance(seen, dict) and seen.get("mark") == mark):
                recorded += _record(registry, job, transcript)
                read += 1
        except (OSError, RegistryError):
            skipped += 1
            continue
        cache[job.job_id] = {
            "mark": mark,
            "ended": job.status in FINAL_JOB_STATUSES,
            "end": job.completed_at,
        }
    _save_cache(state_dir, cache)
    return Synced(read, recorded, skipped)


def _record(registry: Registry, job: Job, transcript: Transcript) -> int:
    usages = read_transcript(transcript)
    return record_usage(registry, job.job_id, usages, SOURCES[transcript.kind])
