"""The policy where an agent's hook asks for a decision (Claude Code's
PermissionRequest): answer it from the rules before anyone is asked, and put the
decision on record.

Called by `orchestrate hook` (app/agents/hook.py ``handle``) before the question
is recorded as ``waiting``, in either approvals mode: an allowed tool therefore
never shows the job waiting, and a question the policy leaves open goes on as it
always did (the control room's decision, or the agent's own dialog). It runs on
the agent's critical path: nothing heavy is imported, and a broken or absent
policy costs one file read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.policy.rules import load_policy, policy_path
from app.settings import HOME_ENV
from registry.decisions import post_decision
from registry.vocabulary import Answer, EventType

if TYPE_CHECKING:
    from app.agents.base import AgentAdapter, HookReading
    from app.policy.decide import Question, Verdict
    from registry.jobs import Registry
    from registry.records import Job

LAUNCH_RECORD = "agent.json"
"""The job's launch record (app/control/launch.py ``LaunchRecord``), read here for its
``workdir`` only, without importing the control room onto the hook's path."""
PATH_KEYS = ("file_path", "notebook_path", "path")


def policy_decision(
    registry: Registry,
    adapter: AgentAdapter,
    job: Job,
    event: str,
    payload: Mapping[str, Any],
    reading: HookReading,
    env: Mapping[str, str],
) -> str | None:
    """The decision output for the agent when the policy answers its question (and
    the decision recorded), else None: the question goes on to a person."""
    if not reading.wants_decision or reading.observation is None or not env.get(HOME_ENV):
        return None
    state_dir = Path(env[HOME_ENV])
    if not has_policy(state_dir, env):
        return None
    question = hook_question(adapter.kind, reading.observation.tool, payload, state_dir, job)
    # may raise: the hook (app/agents/hook.py ``settle``) logs it and asks a person
    verdict = answer_by_policy(registry, state_dir, job.job_id, question, env)
    if verdict is None or verdict.answer is None:
        return None
    return adapter.decision_output(event, verdict.answer is Answer.YES, said(verdict))


def has_policy(state_dir: Path, env: Mapping[str, str]) -> bool:
    """Whether a policy file is there to read (one stat: the cost without a policy)."""
    path, named = policy_path(state_dir, env)
    return named or path.exists()


def answer_by_policy(
    registry: Registry, state_dir: Path, job_id: str, question: Question, env: Mapping[str, str]
) -> Verdict | None:
    """The policy's allow or deny on ``question``, recorded; None when it is left to a
    person (no policy, a broken one, no rule, or a rule that says ask). Shared by every
    structured channel: Claude's hook, Codex's app-server bridge."""
    path, named = policy_path(state_dir, env)
    loaded = load_policy(path, named=named)
    if loaded.policy is None:
        return None
    from app.policy.decide import decide
    from app.policy.reviewer import run_reviewer

    argv = loaded.policy.reviewer
    verdict = decide(loaded.policy, question, lambda asked: run_reviewer(argv, asked, env=env))
    if verdict.answer is None:
        return None
    record_verdict(registry, job_id, verdict, question)
    return verdict


def app_server_answer(
    registry: Registry,
    state_dir: Path,
    job_id: str,
    tool: str,
    params: Mapping[str, Any],
    env: Mapping[str, str],
) -> Answer | None:
    """Codex's app-server approval request (app/agents/codex_bridge.py) answered by the
    policy, or None: its raw ``command`` and ``cwd``, the job's work tree."""
    if not has_policy(state_dir, env):
        return None
    from app.policy.decide import Question

    command, cwd = params.get("command"), params.get("cwd")
    question = Question(
        agent="codex",
        tool=tool,
        command=wrapped_script(command) if isinstance(command, str) else "",
        workdir=job_workdir(state_dir, job_id),
        cwd=Path(cwd) if isinstance(cwd, str) and cwd.startswith("/") else None,
    )
    verdict = answer_by_policy(registry, state_dir, job_id, question, env)
    return verdict.answer if verdict is not None else None


def wrapped_script(command: str) -> str:
    """The script of Codex's own shell wrapper (``/bin/bash -lc 'touch done.txt'``, its
    app-server's ``command``): what runs, to be split and judged like any command.
    Anything else is judged whole (where a ``-c`` asks)."""
    import shlex

    from app.policy.shell import SHELLS

    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0].rsplit("/", 1)[-1] in SHELLS and words[1] in ("-c", "-lc"):
        return words[2]
    return command


def hook_question(
    kind: str, tool: str, payload: Mapping[str, Any], state_dir: Path, job: Job
) -> Question:
    """The question in a hook's payload: the full command (not the observation's
    shortened one), the file, the job's work tree and the agent shell's directory."""
    tool_input = payload.get("tool_input")
    values = tool_input if isinstance(tool_input, Mapping) else {}
    command = values.get("command")
    file_path = next((values[k] for k in PATH_KEYS if isinstance(values.get(k), str)), "")
    cwd = payload.get("cwd")
    workdir = job_workdir(state_dir, job.job_id)
    from app.policy.decide import Question

    return Question(
        agent=kind,
        tool=tool,
        command=command if isinstance(command, str) else "",
        path=file_path,
        workdir=workdir,
        cwd=Path(cwd) if isinstance(cwd, str) and cwd.startswith("/") else None,
    )


def job_workdir(state_dir: Path, job_id: str) -> Path | None:
    """The job's work tree from its launch record; None when it has none."""
    try:
        data = json.loads((state_dir / "logs" / job_id / LAUNCH_RECORD).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    workdir = data.get("workdir") if isinstance(data, dict) else None
    return Path(workdir) if isinstance(workdir, str) and workdir.startswith("/") else None


def said(verdict: Verdict) -> str:
    """ "answered yes by policy rule 'tests'": the line `job why` and the agent read."""
    return f"answered {verdict.answer} by {verdict.by}"


def record_verdict(registry: Registry, job_id: str, verdict: Verdict, question: Question) -> None:
    """The decision on record twice over: a ``job.decision`` (the decision protocol,
    which `job why` reads) and an ``input`` event (the job's audit log)."""
    if verdict.answer is None or verdict.source is None:
        return  # left to the person: nothing was decided
    post_decision(registry.bus, job_id, verdict.answer, by=verdict.source, reason=verdict.by)
    data: dict[str, Any] = {
        "kind": "answer",
        "answer": str(verdict.answer),
        "by": str(verdict.source),
        "how": "policy",
        "tool": question.tool,
    }
    if verdict.rules:
        data["rules"] = list(verdict.rules)
    if question.command or question.path:
        data["command"] = (question.command or question.path)[:500]
    registry.publish(job_id, EventType.INPUT, said(verdict), data)
