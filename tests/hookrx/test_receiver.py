"""The resident hook receiver and its tiny client, as real processes on a real socket
and a real SQLite registry: what goes through the receiver is what the full path
records; with no receiver nothing is lost; a decision makes the round trip; no
request can stop the receiver; the client prints nothing but a decision."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agents import adapter_for
from app.approvals.decision import decide
from app.hookrx import client, hook_command
from app.hookrx.receiver import HookReceiver
from app.hookrx.slot import serving
from registry.activity import Observation
from registry.jobs import Registry
from registry.vocabulary import Activity, Answer, MessageType
from tests.polling import poll_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
SAMPLES = json.loads((FIXTURES / "claude" / "hook-payload-samples.json").read_text())
SEQUENCE = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
    "Notification:idle_prompt",
]
SYSTEM_PYTHON = "/usr/bin/python3"
"""Runs the client with no orchestrate installed: its fallback cannot record, so
whatever is recorded went through the receiver."""


@pytest.fixture
def state(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    Registry.open(directory).db.close()
    return directory.resolve()


def new_job(state: Path) -> str:
    registry = Registry.open(state)
    job = registry.register("create done.txt", "claude", "alpha")
    registry.set_status(job.job_id, "running", "picked")
    registry.db.close()
    return job.job_id


def run_client(
    state: Path,
    job_id: str,
    payload: object,
    *,
    python: str | None = None,
    extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    argv = hook_command()
    if python is not None:
        argv[0] = python
    env = {**os.environ, "ORCHESTRATE_HOME": str(state), "ORCHESTRATE_JOB": job_id, **(extra or {})}
    return subprocess.run(
        [*argv, "claude"],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.fixture
def receiver(state: Path) -> Iterator[tuple[HookReceiver, list[str]]]:
    lines: list[str] = []
    with serving(state, lines.append) as running:
        assert running is not None, lines
        yield running, lines


def recorded(state: Path, job_id: str) -> list[tuple[Any, ...]]:
    """The job's activity events as every reader sees them (signed, in order)."""
    registry = Registry.open(state)
    try:
        changes = registry.activity_history(job_id)
        job = registry.get(job_id)
        rows = registry.db.conn.execute(
            "SELECT payload FROM messages WHERE type = ? AND correlation_id = ? ORDER BY seq",
            (MessageType.JOB_EVENT, job_id),
        ).fetchall()
    finally:
        registry.db.close()
    events = [json.loads(payload) for (payload,) in rows]
    return [
        [(c.activity, c.observation.source, c.observation.tool) for c in changes],
        job.agent_session_id,
        [(e["seq"], e["event"], e["detail"], unsigned(e["data"]), signed(e)) for e in events],
    ]


def unsigned(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "hmac_sig"}


def signed(event: dict[str, Any]) -> bool:
    """Signed with its job's own token (each job has its own, so the sigs differ)."""
    return len(event["data"].get("hmac_sig", "")) == 64


def test_the_receiver_records_what_the_full_path_records(
    state: Path, receiver: tuple[HookReceiver, list[str]]
) -> None:
    """The same payloads, one job through the receiver (a client whose fallback cannot
    record), one through `orchestrate hook`: the same signed events."""
    through_receiver, through_full_path = new_job(state), new_job(state)
    for name in SEQUENCE:
        result = run_client(state, through_receiver, SAMPLES[name], python=SYSTEM_PYTHON)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), name
        full = subprocess.run(
            [sys.executable, "-m", "app", "hook", "claude"],
            input=json.dumps(SAMPLES[name]),
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "ORCHESTRATE_HOME": str(state),
                "ORCHESTRATE_JOB": through_full_path,
            },
            timeout=60,
        )
        assert (full.returncode, full.stdout) == (0, "")
    got, expected = recorded(state, through_receiver), recorded(state, through_full_path)
    assert got == expected
    activities = [a for a, _, _ in got[0]]
    assert activities == ["starting", "working", "waiting", "working", "idle"]
    assert all(signed for *_, signed in got[2])
    assert sum(receiver[0].recorder.batches) >= len(SEQUENCE) - 1  # all but nothing-to-say


def test_with_no_receiver_the_client_falls_back_and_records(state: Path) -> None:
    """No socket at all, then a dead one (a crashed supervisor's): the full path records."""
    job_id = new_job(state)
    assert not Path(client.socket_path(str(state))).exists()
    result = run_client(state, job_id, SAMPLES["UserPromptSubmit"])
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert Registry.open(state).get(job_id).activity == "working"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(client.socket_path(str(state)))  # bound, never listening: refused
    try:
        result = run_client(state, job_id, SAMPLES["Stop"])
    finally:
        dead.close()
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert Registry.open(state).get(job_id).activity == "idle"


def test_a_decision_makes_the_round_trip_through_the_receiver(
    state: Path, receiver: tuple[HookReceiver, list[str]]
) -> None:
    """Under --approvals control-room the client waits; the control room's answer comes
    back as Claude's decision output, and the question was recorded meanwhile."""
    job_id = new_job(state)
    argv = hook_command()
    argv[0] = SYSTEM_PYTHON
    env = {
        **os.environ,
        "ORCHESTRATE_HOME": str(state),
        "ORCHESTRATE_JOB": job_id,
        "ORCHESTRATE_APPROVALS": "control-room",
        "ORCHESTRATE_APPROVAL_WAIT_SEC": "30",
    }
    question = state.parent / "question.json"
    question.write_text(json.dumps(SAMPLES["PermissionRequest"]))
    with question.open("rb") as stdin:
        waiting = subprocess.Popen(
            [*argv, "claude"], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
    registry = Registry.open(state)
    poll_until(lambda: registry.get(job_id).activity == "waiting", what="the question")
    assert waiting.poll() is None  # it waits for the answer
    decide(registry.bus, job_id, Answer.YES, by="test")
    out, err = waiting.communicate(timeout=30)
    expected = adapter_for("claude").decision_output("PermissionRequest", True, "")
    assert (waiting.returncode, out.decode(), err) == (0, f"{expected}\n", b"")


def raw_request(path: str, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(path)
        try:
            conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # refused half way: what it answered is read below
        return conn.makefile("rb").read()


def request(state: Path, *, stdin: str = "", job_id: str = "", home: str = "") -> bytes:
    env = {"ORCHESTRATE_HOME": home or str(state), "ORCHESTRATE_JOB": job_id}
    return client.encode_request("claude", [], env, stdin.encode("utf-8", "surrogatepass"))


def test_hostile_and_oversized_requests_are_refused_and_the_receiver_goes_on(
    state: Path, receiver: tuple[HookReceiver, list[str]]
) -> None:
    path = client.socket_path(str(state))
    job_id = new_job(state)
    good = request(state, job_id=job_id)
    hostile = [
        b"",
        b"\xff\xfe not a request \x1b]0;owned\x07\n",
        b"ORX1 1 1",
        b"ORX1 -1 1\nclaude\0",
        b"ORX1 99999999999 1\nclaude\0",
        b"ORX1 0 2\nclaude\0ORCHESTRATE_HOME=" + str(state).encode() + b"\0",  # cut short
        b"ORX1 0 1\nclaude\0NO_EQUALS_SIGN\0{}",
        request(state, job_id=job_id, home="/elsewhere"),
        good[:-1].replace(b"ORX1", b"ORX2"),
        good + b" " * (client.MAX_REQUEST_BYTES + 10),
    ]
    for data in hostile:
        reply = raw_request(path, data)
        assert reply.startswith(b"REFUSED "), data[:40]
    assert len(receiver[1]) == len(hostile)
    assert all(line.isprintable() and "owned" not in line for line in receiver[1])
    # a payload an agent could have filled with escapes and junk: recorded as text, or not at all
    bad_payload = {"hook_event_name": "Stop", "session_id": "\x1b[2J\x1b]52;c;aGk=\x07"}
    for stdin in ["{not json", json.dumps(bad_payload), '{"a": 1, "a": 2}', "{\ud800"]:
        assert raw_request(path, request(state, stdin=stdin, job_id=job_id)) == b"DONE\n"
    result = run_client(state, job_id, SAMPLES["UserPromptSubmit"], python=SYSTEM_PYTHON)
    assert result.returncode == 0
    assert Registry.open(state).get(job_id).activity == "working"  # still serving


@pytest.mark.parametrize("served", [True, False], ids=["receiver", "fallback"])
@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[1, 2]",
        '{"hook_event_name": 7}',
        SAMPLES["PermissionRequest"],
        "\x00\x1b[2J",
    ],
)
def test_the_client_prints_nothing_but_a_decision(
    state: Path, served: bool, payload: object
) -> None:
    """Whatever comes in, with or without a receiver and with no decision asked for:
    exit 0, nothing on stdout or stderr."""
    job_id = new_job(state)
    with serving(state) if served else _nothing():
        result = run_client(state, job_id, payload)
        unknown_job = run_client(state, "deadbeef", payload)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert (unknown_job.returncode, unknown_job.stdout, unknown_job.stderr) == (0, "", "")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def imported_by(argv: list[str], env: dict[str, str]) -> set[str]:
    """The modules a whole process imported (``-X importtime``)."""
    argv = [argv[0], "-X", "importtime", *argv[1:]]
    done = subprocess.run(argv, input="{}", capture_output=True, text=True, env=env, timeout=30)
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}


def test_the_client_imports_almost_nothing(
    state: Path, receiver: tuple[HookReceiver, list[str]]
) -> None:
    """Beyond a bare `python -I -S`: ``_socket`` and ``os`` (frozen into the interpreter
    with what it imports) only: no json, socket, re or enum, nothing of orchestrate,
    while it really asks the receiver."""
    env = {**os.environ, "ORCHESTRATE_HOME": str(state), "ORCHESTRATE_JOB": new_job(state)}
    bare = imported_by([*hook_command()[:-1], "-c", "pass"], env)
    used = imported_by([*hook_command(), "claude"], env)
    frozen_os = {"os", "stat", "_stat", "posixpath", "genericpath", "_collections_abc"}
    assert used - bare <= {"__future__", "_socket", *frozen_os}
    assert "_socket" in used
    assert sum(receiver[0].recorder.batches) == 0  # "{}" says nothing to record


def test_a_long_state_dir_gets_a_short_private_socket(tmp_path: Path) -> None:
    state = (tmp_path / ("d" * 90) / "state").resolve()
    Registry.open(state).db.close()
    lines: list[str] = []
    with serving(state, lines.append) as running:
        assert running is not None
        path = Path(client.socket_path(str(state)))
        assert path.parent == Path(client.short_socket_dir())
        assert path.is_socket() and (path.parent.stat().st_mode & 0o777) == 0o700
        assert lines == [f"hook receiver at {path} (the state dir's path is too long)"]
        job_id = new_job(state)
        result = run_client(state, job_id, SAMPLES["Stop"], python=SYSTEM_PYTHON)
        assert result.returncode == 0
        assert Registry.open(state).get(job_id).activity == "idle"
    assert not path.exists()


def test_the_client_forwards_the_variables_the_hook_reads() -> None:
    """The client cannot import app.settings: its copy of the names is held equal here."""
    from app.hookrx.receiver import KNOWN_ENV

    assert client.FORWARDED_ENV == KNOWN_ENV


def test_codex_notify_with_its_payload_as_the_last_argument(
    state: Path, receiver: tuple[HookReceiver, list[str]]
) -> None:
    """Codex's `notify` passes its JSON as an argument and gives no stdin: the turn's end
    and its thread id are recorded through the receiver."""
    registry = Registry.open(state)
    job = registry.register("create done.txt", "codex", "alpha")
    registry.set_status(job.job_id, "running", "picked")
    registry.observe(job.job_id, Observation(Activity.WORKING, "osc:codex"))
    payload = {
        "type": "agent-turn-complete",
        "thread-id": "thread-7",
        "input-messages": ["create done.txt"],
    }
    argv = [SYSTEM_PYTHON, *hook_command()[1:], "codex", json.dumps(payload)]
    env = {**os.environ, "ORCHESTRATE_HOME": str(state), "ORCHESTRATE_JOB": job.job_id}
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    recorded_job = registry.get(job.job_id)
    assert (recorded_job.activity, recorded_job.agent_session_id) == (Activity.IDLE, "thread-7")
