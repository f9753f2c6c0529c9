"""`orchestrate hook AGENT`: what an agent's hook runs, on the agent's critical path.

It reads the hook's JSON (stdin, or the last argument for Codex's `notify`),
asks the agent's adapter what it means, and records a signed activity event for
the pane's job (ORCHESTRATE_HOME, ORCHESTRATE_JOB). It must be fast and must
never fail or block the agent: whatever goes wrong is written to the job's
``hook-errors.log`` and the hook exits 0 with nothing on stdout (Claude adds a
hook's stdout to the model's context). The one exception is a decision: under
``--approvals control-room`` a permission hook waits, bounded, for the answer
given in the control room (the decision protocol: app/approvals/decision.py)
and prints it in the agent's format.

Started from `app.entry` before click is imported, to keep the cost low.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.settings import APPROVAL_WAIT_ENV, APPROVALS_ENV, HOME_ENV, JOB_ENV

BUSY_TIMEOUT_MS = 2000
MAX_PAYLOAD_BYTES = 1024 * 1024


def read_payload(argv: Sequence[str], stdin_text: str) -> dict[str, Any]:
    """The hook's JSON object: stdin, else a JSON last argument (Codex `notify`).

    Read as all JSON from outside is (``decode_json``): a key given twice or a
    lone surrogate is refused (InvalidEvent, logged by ``main``), never guessed at."""
    from registry.events import decode_json

    for text in (stdin_text, argv[-1] if argv else ""):
        text = text.strip()
        if text.startswith("{"):
            value = decode_json(text[:MAX_PAYLOAD_BYTES], "hook payload")
            if isinstance(value, dict):
                return value
    return {}


def event_name(payload: Mapping[str, Any]) -> str:
    """The hook event: Claude and Gemini name it; Codex's notify says its type."""
    for key in ("hook_event_name", "type"):
        value = payload.get(key)
        if isinstance(value, str):
            return value
    return ""


def handle(kind: str, payload: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """Record what the payload says; the decision to print, if one was asked for."""
    from app.agents import built_in
    from app.approvals.decision import CONTROL_ROOM_APPROVALS, wait_for_decision
    from app.policy.hook import policy_decision
    from registry.jobs import Registry

    adapter = built_in(kind)
    state_dir, job_id = env.get(HOME_ENV), env.get(JOB_ENV)
    if adapter is None or not state_dir or not job_id:
        return None
    event = event_name(payload)
    reading = adapter.read_hook(event, payload)
    if reading.observation is None and reading.agent_session_id is None:
        return None
    registry = Registry.open(state_dir, busy_timeout_ms=BUSY_TIMEOUT_MS)
    try:
        job = registry.get(job_id)
        if not adapter.about_the_task(payload, job.prompt):
            return None
        if reading.agent_session_id and job.agent_session_id != reading.agent_session_id:
            registry.set_agent_session_id(job_id, reading.agent_session_id)
        # the approval policy answers first: a question it decides never shows waiting
        decided = policy_decision(registry, adapter, job, event, payload, reading, env)
        if decided is not None:
            return decided
        recorded = None
        if reading.observation is not None:
            recorded = registry.observe(job_id, reading.observation)
        if not reading.wants_decision or env.get(APPROVALS_ENV) != CONTROL_ROOM_APPROVALS:
            return None
        # a repeated sighting records nothing: only decisions from now on are for it
        after = recorded.bus_seq if recorded is not None else registry.bus.latest_seq()
        wait = float(env.get(APPROVAL_WAIT_ENV) or 120)
        decision = wait_for_decision(registry.bus, job_id, after, time.monotonic() + wait)
        if decision is None:
            return None  # undecided: the agent shows its own dialog
        return adapter.decision_output(event, decision.allow, decision.reason)
    finally:
        registry.db.close()


def log_failure(env: Mapping[str, str], kind: str) -> None:
    """Keep what went wrong where a person can find it, never on the agent's screen."""
    state_dir, job_id = env.get(HOME_ENV), env.get(JOB_ENV)
    if not state_dir or not job_id or not job_id.isalnum():
        return
    try:
        path = Path(state_dir) / "logs" / job_id / "hook-errors.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"--- hook {kind} at {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
            handle.write(traceback.format_exc())
    except OSError:
        pass


def main(argv: Sequence[str]) -> int:
    """Entry point: always exit 0; print only a decision."""
    kind = argv[0] if argv else ""
    env = os.environ
    try:
        rest = argv[1:]
        in_argv = bool(rest) and rest[-1].lstrip().startswith("{")  # never wait on stdin then
        quiet = in_argv or sys.stdin is None or sys.stdin.isatty()
        payload = read_payload(rest, "" if quiet else sys.stdin.read())
        output = handle(kind, payload, env)
        if output:
            sys.stdout.write(output + "\n")
            sys.stdout.flush()
    except Exception:
        log_failure(env, kind)
    return 0
