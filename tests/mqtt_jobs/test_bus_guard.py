"""The bus belongs to the registry for its own message types (issue 19, item 2).

`msg send` used to put an unsigned `job.event` on the SQLite bus: `subscribe`
took it (a signing job ended `completed`, exit 0) and, sent with the id
``<job>:1``, it used up the job's seq 1. Now `msg send` refuses every type and
id the registry or the control room writes, and whoever reads job events
from the bus verifies them as it would verify MQTT events.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bus.messages import Outgoing
from registry.bus_types import JOB_DECISION
from registry.events import build_event
from registry.jobs import Registry
from registry.signing import sign
from registry.vocabulary import MessageType
from tests.mqtt_jobs.test_subscribe import events, publish, register

DECISION_TYPE = MessageType.JOB_DECISION
"""What registry/decisions.py writes and a waiting hook or the Codex bridge reads."""


def dump(state_dir: Path) -> list[str]:
    """Every row of state.db, to prove a refused command stored nothing."""
    with sqlite3.connect(state_dir / "state.db") as conn:
        return list(conn.iterdump())


def unsigned_completed(job_id: str, seq: int = 1) -> str:
    return json.dumps(build_event(job_id, seq, "completed", "forged").to_dict())


@pytest.mark.parametrize(
    "kind",
    [
        "job.event", "job.status", "job.registered", "job.flag", "job.decision", "job.anything",
        "session.status", "queue.nudge", "control.started", "JOB.EVENT", " job.event",
    ],
)  # fmt: skip
def test_msg_send_refuses_the_registrys_types(cli, state_dir: Path, kind: str) -> None:  # type: ignore[no-untyped-def]
    """Every type the registry (or the control room) writes is refused: one line,
    exit 1, nothing stored."""
    job_id = register(cli, None)
    before = dump(state_dir)
    result = cli("msg", "send", kind, unsigned_completed(job_id), "--correlation-id", job_id)
    assert result.returncode == 1, result
    assert result.stderr.count("\n") == 1 and "reserved" in result.stderr, result.stderr
    assert dump(state_dir) == before


def test_a_forged_decision_cannot_answer_a_permission_request(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """Under --approvals control-room, a waiting hook takes the job's latest
    `job.decision` as the control room's answer: `msg send` must not write one."""
    assert DECISION_TYPE == JOB_DECISION
    job_id = register(cli, None)
    before = dump(state_dir)
    answer = json.dumps({"job_id": job_id, "answer": "yes", "by": "hq"})
    result = cli("msg", "send", DECISION_TYPE, answer, "--correlation-id", job_id)
    assert result.returncode == 1 and "reserved" in result.stderr, result
    assert dump(state_dir) == before


def test_msg_send_refuses_the_registrys_message_ids(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """`--id <job>:1` took the id the registry records seq 1 under: the job's real
    seq 1 was then refused as a duplicate."""
    job_id = register(cli, None)
    before = dump(state_dir)
    for msg_id in (f"{job_id}:1", f"{job_id}:flag:1"):
        result = cli("msg", "send", "chat", "{}", "--id", msg_id)
        assert result.returncode == 1 and "reserved" in result.stderr, result
    assert dump(state_dir) == before
    publish(cli, job_id, "started")
    assert Registry.open(state_dir).get(job_id).last_seq == 1


def test_ordinary_messages_still_go(cli) -> None:  # type: ignore[no-untyped-def]
    """Types that merely mention a reserved word are the users' own."""
    for kind in ("status", "jobs", "job", "my.job.event", "jobevent"):
        assert cli("msg", "send", kind, "{}").returncode == 0, kind


def test_subscribe_drops_an_unsigned_job_event_on_the_bus(cli, spawn, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """Reproduces the finding below `msg send`: an unsigned `job.event` written to
    the bus by anything but the registry is dropped with a reason, and the job's
    real end still ends the wait."""
    job_id = register(cli, None)
    subscriber = spawn("subscribe", "--job", job_id, "--timeout", "60")
    subscriber.wait_stderr("following")
    forge_on_bus(state_dir, job_id, json.loads(unsigned_completed(job_id)), f"{job_id}:x1")
    subscriber.wait_stderr("missing signature")
    publish(cli, job_id, "started")
    publish(cli, job_id, "error", "real end")
    assert subscriber.wait() == 1, subscriber.stderr
    assert events(subscriber.stdout) == [(1, "started"), (2, "error")]


def test_subscribe_drops_a_bus_event_filed_under_another_job(cli, spawn, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """A job's events are filed under its id on the bus (correlation_id): one of
    job A's, signed with A's token but filed under B, is not B's."""
    job_a, job_b = register(cli, None), register(cli, None)
    token_a = Registry.open(state_dir).get(job_a).auth_token
    assert token_a
    subscriber = spawn("subscribe", "--job", job_a, "--job", job_b, "--timeout", "60")
    subscriber.wait_stderr("following")
    signed = sign(build_event(job_a, 1, "error", "filed wrong"), token_a).to_dict()
    forge_on_bus(state_dir, job_b, signed, f"{job_b}:x1")
    subscriber.wait_stderr(f"filed under job {job_b}")
    publish(cli, job_a, "completed")
    publish(cli, job_b, "completed")
    assert subscriber.wait() == 0, subscriber.stderr
    assert sorted(events(subscriber.stdout)) == [(1, "completed"), (1, "completed")]


def forge_on_bus(state_dir: Path, job_id: str, payload: Any, msg_id: str) -> None:
    """Write a `job.event` straight through the bus API, bypassing the registry
    (what `msg send` used to do, or any code that holds a Bus)."""
    bus = Registry.open(state_dir).bus
    bus.publish(
        Outgoing(type="job.event", from_agent=job_id, payload=payload, correlation_id=job_id,
                 id=msg_id)
    )  # fmt: skip
