"""A job's launch, planned here and run by the pane runner (``app/agents/pane_runner.py``):
its adapter's plan, the files beside its pane log, and the record that lets the job
be started again (resume, reboot)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from app.agents import adapter_for
from app.agents.base import AgentAdapter, LaunchContext, LaunchPlan
from app.agents.generic import Generic
from app.agents.settings_files import write_private
from app.control.errors import UnknownAgent
from app.hookrx import hook_command
from registry.records import Job

APPROVAL_MODES = ("agent", "control-room")


def split_command(text: str, what: str = "--agent-cmd") -> list[str]:
    """A shell-like command string as argv (shlex rules; nothing is ever run by a shell)."""
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise UnknownAgent(f"{what} {text!r} cannot be split: {error}") from None
    if not argv:
        raise UnknownAgent(f"{what} must not be empty")
    return argv


def instructions(job_id: str) -> str:
    """The header prepended to the prompt of an agent that reports by itself (the demo
    agent, or a command reading {prompt_file}): how to report back.

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


@dataclass(frozen=True)
class LaunchRecord:
    """What is kept of a job's start so that resuming it starts the same agent."""

    agent_cmd: list[str] | None
    workdir: str
    approvals: str = "agent"
    approval_wait_sec: float = 120.0

    def save(self, job_dir: Path) -> None:
        write_private(job_dir / "agent.json", json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, job_dir: Path) -> LaunchRecord | None:
        """The record, or None if the job never had a pane (registered by hand)."""
        try:
            data = json.loads((job_dir / "agent.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or "workdir" not in data:
            return None
        argv = data.get("agent_cmd", data.get("argv"))  # "argv": written by older releases
        return cls(
            agent_cmd=[str(word) for word in argv] if isinstance(argv, list) else None,
            workdir=str(data["workdir"]),
            approvals=str(data.get("approvals", "agent")),
            approval_wait_sec=float(data.get("approval_wait_sec", 120.0)),
        )


SESSION_RESUME: dict[str, tuple[str, ...]] = {
    "claude": ("claude", "--continue"),
    "codex": ("codex", "resume", "--last", "--no-daemon"),
    "gemini": ("gemini", "--resume", "latest"),
    "aider": ("aider", "--restore-chat-history"),
}
"""How `session resume` continues the newest conversation in a stopped session, per kind
(a job's own resume uses its session id instead). ORCHESTRATE_RESUME_CMD_<KIND> overrides."""


def session_resume_command(agent: str, env: Mapping[str, str] | None = None) -> list[str] | None:
    """The argv that resumes `agent`'s newest conversation, or None when the kind has none."""
    source = os.environ if env is None else env
    override = source.get("ORCHESTRATE_RESUME_CMD_" + agent.upper().replace("-", "_"))
    if override:
        return split_command(override, "resume command")
    adapter = adapter_for(agent)
    found = SESSION_RESUME.get(adapter.kind)
    return list(found) if found else None


def adapter_checked(
    agent: str,
    agent_cmd: Sequence[str] | None,
    state_dir: Path,
    env: Mapping[str, str],
) -> AgentAdapter:
    """The adapter for ``agent``, refused (UnknownAgent) when nothing could start it:
    a kind with no command and none given, or a built-in agent that is not installed."""
    adapter = adapter_for(agent, state_dir, env)
    refused = adapter.refuse_command(agent_cmd, env)
    if refused:
        raise UnknownAgent(refused)
    if agent_cmd:
        return adapter
    if isinstance(adapter, Generic) and not adapter.command:
        raise UnknownAgent(
            f"no default command for agent {agent!r} (known: claude, codex, gemini, aider, "
            "demo, or one defined in agents.toml); use --agent-cmd"
        )
    executable = adapter.command[0] if isinstance(adapter, Generic) else adapter.executable
    if shutil.which(executable, path=env.get("PATH", os.defpath)) is None:
        raise UnknownAgent(
            f"{adapter.display_name} is not installed here (no {executable!r} on PATH); "
            "install it, or give the command with --agent-cmd"
        )
    return adapter


def context_for(
    job: Job, job_dir: Path, record: LaunchRecord, env: Mapping[str, str]
) -> LaunchContext:
    """The adapter's view of one job's start."""
    hook = shlex.join(hook_command())  # the receiver's client; it falls back to `orchestrate hook`
    return LaunchContext(
        job_id=job.job_id,
        job_dir=job_dir,
        workdir=Path(record.workdir),
        hook_command=hook,
        agent_session_id=job.agent_session_id,
        approvals="control-room" if record.approvals == "control-room" else "agent",
        approval_wait_sec=record.approval_wait_sec,
        env=env,
    )


def plan_for(
    adapter: AgentAdapter, ctx: LaunchContext, record: LaunchRecord, *, resume: bool
) -> LaunchPlan:
    """The adapter's plan: its resume where it has one (and the job an agent session
    id), else a fresh start with the original prompt."""
    if resume:
        plan = adapter.resume(ctx, record.agent_cmd)
        if plan is not None:
            return plan
    return adapter.start(ctx, record.agent_cmd)


def write_prompt(job_dir: Path, text: str, *, with_instructions: str | None) -> Path:
    """`<job_dir>/prompt.txt`: the prompt as given (never interpolated), after the
    reporting instructions for an agent that reads them."""
    body = text + ("" if text.endswith("\n") else "\n")
    return write_private(job_dir / "prompt.txt", (with_instructions or "") + body)
