"""The policy's reviewer: a command the person names (``reviewer = "CMD"``) that gets
a question no rule decided as JSON on stdin and answers ``allow``, ``deny`` or
``ask`` on its first line of stdout.

It runs without a shell (its argv is the policy's), in its own process group so
that a timeout kills whatever it started, with the job's token removed from its
environment (a reviewer must not be able to sign the job's events). A timeout, a
crash, a non-zero exit or any other answer means ``ask``: the reviewer can only
ever save the person a question, never take one from them by failing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

from app.policy.decide import Question
from app.settings import JOB_TOKEN_ENV
from registry.vocabulary import PolicyDecision

REVIEWER_TIMEOUT_SEC = 3.0
"""The reviewer's bound: under Claude's 5 s permission-hook timeout (app/agents/claude.py),
so that an answer comes back before the agent gives up on the hook."""


def run_reviewer(
    argv: Sequence[str],
    question: Question,
    *,
    timeout_sec: float = REVIEWER_TIMEOUT_SEC,
    env: Mapping[str, str] | None = None,
) -> tuple[PolicyDecision, str]:
    """The reviewer's decision on ``question`` and why (a failure is ``ask``)."""
    source = os.environ if env is None else env
    child_env = {name: value for name, value in source.items() if name != JOB_TOKEN_ENV}
    payload = json.dumps(question.to_json(), ensure_ascii=False).encode("utf-8")
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=child_env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as error:
        return PolicyDecision.ASK, f"the reviewer could not start ({error.strerror or error})"
    try:
        out, _ = process.communicate(payload, timeout=timeout_sec)
    except subprocess.TimeoutExpired:
        _kill(process)
        return PolicyDecision.ASK, f"the reviewer gave no answer within {timeout_sec:g} s"
    if process.returncode != 0:
        return PolicyDecision.ASK, f"the reviewer exited with status {process.returncode}"
    first = out.decode("utf-8", "replace").strip().splitlines()[:1]
    word = first[0].strip().lower() if first else ""
    try:
        decision = PolicyDecision(word)
    except ValueError:
        return PolicyDecision.ASK, "the reviewer's answer was not allow, deny or ask"
    return decision, f"the reviewer said {decision}"


def _kill(process: subprocess.Popen[bytes]) -> None:
    """End the reviewer and everything it started (its process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    process.wait()
