"""`orchestrate hook AGENT`: the one path of an agent's hook, on its critical path.

Agents' hooks run the tiny client of app/hookrx/client.py; the supervisor's
resident receiver (app/hookrx/receiver.py) runs this module's steps for it
(``hear``, ``record``, ``settle``), and with no receiver the client runs
`orchestrate hook`, which runs them here (``main``, ``handle``). Either way it
reads the hook's JSON (stdin, or the last argument for Codex's `notify`), asks
the agent's adapter what it means, and records a signed activity event for the
pane's job (ORCHESTRATE_HOME, ORCHESTRATE_JOB). It must be fast and must
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.settings import APPROVAL_WAIT_ENV, APPROVALS_ENV, HOME_ENV, JOB_ENV

if TYPE_CHECKING:
    from app.agents.base import HookReading
    from registry.jobs import Registry

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


@dataclass(frozen=True)
class Heard:
    """A hook payload that says something about its job: what its adapter read."""

    kind: str
    event: str
    job_id: str
    payload: Mapping[str, Any]
    reading: HookReading


@dataclass(frozen=True)
class Asked:
    """A recorded question whose hook waits for the control room's decision."""

    kind: str
    event: str
    job_id: str
    after_seq: int
    """Only decisions posted after this seq are for this question."""
    wait_sec: float
    payload: Mapping[str, Any]
    """The hook's own JSON (the tool and its input), for whatever decides before a person."""
    env: Mapping[str, str]
    """The hook's ORCHESTRATE_* variables (the state dir, the policy file, approvals)."""
    unrecorded: HookReading | None = None
    """The question itself, when the approval policy answers first: it is recorded as
    ``waiting`` only once the policy has left it to a person (``settle``), so a
    question the policy decides never shows the job waiting, and the policy (which
    may run a reviewer for seconds) runs outside the receiver's batch transaction."""


def handle(kind: str, payload: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """Record what the payload says; the decision to print, if one was asked for.

    The one path of a hook, in three steps: ``hear`` (no database), ``record`` and
    ``settle``. `orchestrate hook` runs them here; the resident receiver
    (app/hookrx/receiver.py) runs the same steps, ``record`` in one transaction with
    the other hooks that arrived together, then ``settle`` on its own thread."""
    from registry.jobs import Registry

    heard = hear(kind, payload, env)
    if heard is None or not env.get(HOME_ENV):
        return None
    registry = Registry.open(env[HOME_ENV], busy_timeout_ms=BUSY_TIMEOUT_MS)
    try:
        asked = record(registry, heard, env)
        return settle(registry, asked) if asked is not None else None
    finally:
        registry.db.close()


def hear(kind: str, payload: Mapping[str, Any], env: Mapping[str, str]) -> Heard | None:
    """What the agent's adapter reads in the payload; None when it says nothing to
    record (or no job is named): then no database is opened at all."""
    from app.agents import built_in

    adapter = built_in(kind)
    job_id = env.get(JOB_ENV)
    if adapter is None or not job_id:
        return None
    event = event_name(payload)
    reading = adapter.read_hook(event, payload)
    if reading.observation is None and reading.agent_session_id is None:
        return None
    return Heard(kind, event, job_id, payload, reading)


def record(registry: Registry, heard: Heard, env: Mapping[str, str]) -> Asked | None:
    """Write what the payload says to the job (its activity, its agent session id);
    the question to settle when this hook must wait for a decision.

    Every write goes through the registry's own transactions, so a caller holding
    an outer one (``registry.store.write()``) gets them all in one COMMIT."""
    from app.agents import built_in

    adapter = built_in(heard.kind)
    job_id, reading = heard.job_id, heard.reading
    job = registry.get(job_id)
    if adapter is None or not adapter.about_the_task(heard.payload, job.prompt):
        return None
    if reading.agent_session_id and job.agent_session_id != reading.agent_session_id:
        registry.set_agent_session_id(job_id, reading.agent_session_id)
    if reading.wants_decision and reading.observation is not None and policy_applies(env):
        # the approval policy answers first (settle): nothing recorded yet
        return Asked(
            heard.kind, heard.event, job_id, 0, wait_seconds(env), heard.payload, env, reading
        )
    return ask(registry, heard.kind, heard.event, job_id, reading, heard.payload, env)


def ask(
    registry: Registry,
    kind: str,
    event: str,
    job_id: str,
    reading: HookReading,
    payload: Mapping[str, Any],
    env: Mapping[str, str],
) -> Asked | None:
    """Record the reading; the question to wait on when the control room answers."""
    from app.approvals.decision import CONTROL_ROOM_APPROVALS

    recorded = None
    if reading.observation is not None:
        recorded = registry.observe(job_id, reading.observation)
    if not reading.wants_decision or env.get(APPROVALS_ENV) != CONTROL_ROOM_APPROVALS:
        return None
    # a repeated sighting records nothing: only decisions from now on are for it
    after = recorded.bus_seq if recorded is not None else registry.bus.latest_seq()
    return Asked(kind, event, job_id, after, wait_seconds(env), payload, env)


def policy_applies(env: Mapping[str, str]) -> bool:
    """Whether an approval policy is there to ask (one stat: the cost without one)."""
    from app.policy.hook import has_policy

    state_dir = env.get(HOME_ENV)
    return bool(state_dir) and has_policy(Path(state_dir or "."), env)


def wait_seconds(env: Mapping[str, str]) -> float:
    """How long a question waits for the control room (the job's --approval-wait)."""
    return float(env.get(APPROVAL_WAIT_ENV) or 120)


def settle(registry: Registry, asked: Asked) -> str | None:
    """The decision on ``asked`` in the agent's format, waiting for it (bounded); None
    when none came (the agent then shows its own dialog). Runs outside any transaction,
    on both paths (the receiver's and `orchestrate hook`'s): the place for a check that
    decides before the wait."""
    from app.agents import built_in
    from app.approvals.decision import wait_for_decision

    adapter = built_in(asked.kind)
    if adapter is None:
        return None
    if asked.unrecorded is not None:
        from app.policy.hook import policy_decision

        job = registry.get(asked.job_id)
        reading = asked.unrecorded
        try:
            decided = policy_decision(
                registry, adapter, job, asked.event, asked.payload, reading, asked.env
            )
        except Exception:  # the policy never costs the agent its question: it asks
            log_failure(asked.env, asked.kind)
            decided = None
        if decided is not None:
            return decided
        waiting = ask(
            registry, asked.kind, asked.event, asked.job_id, reading, asked.payload, asked.env
        )
        if waiting is None:
            return None
        asked = waiting
    deadline = time.monotonic() + asked.wait_sec
    decision = wait_for_decision(registry.bus, asked.job_id, asked.after_seq, deadline)
    if decision is None:
        return None  # undecided: the agent shows its own dialog
    return adapter.decision_output(asked.event, decision.allow, decision.reason)


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
