"""What each agent kind runs: start, resume and graceful-exit commands, and the prompt file."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from app.orchestration.errors import UnknownAgent
from app.tmux.launch import PROMPT_PLACEHOLDER

# The agent kinds orchestrate knows how to start without --agent-cmd. The demo
# agent gets the prompt as a path so its stdin stays the terminal (for y/n).
START_COMMANDS: Mapping[str, tuple[str, ...]] = {
    "demo": (sys.executable, "-m", "app.demo_agent", PROMPT_PLACEHOLDER),
    "claude-code": ("claude",),
    "claude": ("claude",),
    "codex": ("codex",),
    "aider": ("aider",),
}

# How `session resume` continues a stopped agent's conversation, per kind.
# ORCHESTRATE_RESUME_CMD_<KIND> (kind upper-cased, "-" as "_") overrides it.
RESUME_COMMANDS: Mapping[str, tuple[str, ...]] = {
    "claude-code": ("claude", "--continue"),
    "claude": ("claude", "--continue"),
    "codex": ("codex", "resume", "--last"),
    "aider": ("aider", "--restore-chat-history"),
}

# Keys a graceful stop types into each live agent pane (tmux key names).
EXIT_KEYS: Mapping[str, tuple[str, ...]] = {
    "claude-code": ("C-c", "C-c"),
    "claude": ("C-c", "C-c"),
    "codex": ("C-c", "C-c"),
    "aider": ("C-d",),
}
DEFAULT_EXIT_KEYS: tuple[str, ...] = ("C-c",)


def split_command(text: str, what: str = "--agent-cmd") -> list[str]:
    """A shell-like command string as argv (shlex rules; nothing is ever run by a shell)."""
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise UnknownAgent(f"{what} {text!r} cannot be split: {error}") from None
    if not argv:
        raise UnknownAgent(f"{what} must not be empty")
    return argv


def start_command(agent: str, agent_cmd: Sequence[str] | None = None) -> list[str]:
    """The argv that runs `agent`: the given one, else the kind's default."""
    if agent_cmd:
        return list(agent_cmd)
    if agent in START_COMMANDS:
        return list(START_COMMANDS[agent])
    known = ", ".join(sorted(START_COMMANDS))
    raise UnknownAgent(f"no default command for agent {agent!r} (known: {known}); use --agent-cmd")


def resume_command(agent: str, env: Mapping[str, str] | None = None) -> list[str] | None:
    """The argv that resumes `agent`'s conversation, or None when the kind has none."""
    source = os.environ if env is None else env
    override = source.get("ORCHESTRATE_RESUME_CMD_" + agent.upper().replace("-", "_"))
    if override:
        return split_command(override, "resume command")
    found = RESUME_COMMANDS.get(agent)
    return list(found) if found else None


def exit_keys(agent: str) -> tuple[str, ...]:
    """The keys that ask `agent` to exit on its own."""
    return EXIT_KEYS.get(agent, DEFAULT_EXIT_KEYS)


def instructions(job_id: str) -> str:
    """The header prepended to every prompt: how the agent reports back.

    The job id is 8 hex digits (the registry makes it), so nothing here needs quoting.
    """
    publish = f"orchestrate publish --job {job_id} --event"
    return "\n".join(
        [
            f"You are working on orchestrate job {job_id}. Report as you go, from any directory",
            "(ORCHESTRATE_HOME and ORCHESTRATE_JOB are set in your environment):",
            f'  {publish} started --detail "what you are about to do"',
            f'  {publish} progress --detail "what you just finished"',
            f'  {publish} permission_required --detail "what you need approved"',
            f'  {publish} completed --detail "summary"      (last, when done)',
            f'  {publish} error --detail "why you stopped"  (last, when you cannot finish)',
            "Details are short safe text: no absolute paths, no secrets.",
            "",
            "--- task ---",
            "",
        ]
    )


def write_private(path: Path, text: str) -> None:
    """Write `text` to a file only its owner can read (prompts may hold secrets)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_CREAT


def write_prompt(job_dir: Path, job_id: str, prompt: str) -> Path:
    """`<job_dir>/prompt.txt`: the instructions, then the prompt as given (never interpolated)."""
    path = job_dir / "prompt.txt"
    write_private(path, instructions(job_id) + prompt + ("" if prompt.endswith("\n") else "\n"))
    return path


def save_launch(job_dir: Path, argv: Sequence[str], workdir: Path) -> None:
    """Remember how the job's agent was started, so `resume_job` can start it again."""
    record = {"argv": list(argv), "workdir": str(workdir)}
    write_private(job_dir / "agent.json", json.dumps(record, indent=2) + "\n")


def load_launch(job_dir: Path) -> tuple[list[str], Path] | None:
    """The argv and workdir saved by `save_launch`, or None if the job never had a pane."""
    try:
        record = json.loads((job_dir / "agent.json").read_text(encoding="utf-8"))
        return [str(word) for word in record["argv"]], Path(record["workdir"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
