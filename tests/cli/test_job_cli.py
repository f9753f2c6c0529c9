"""`orchestrate job` and `orchestrate publish` as real processes (seed 001 §6, seed 000 §2)."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from registry.events import build_event
from registry.signing import sign

Cli = Callable[..., Any]
JOB_ID = re.compile(r"[0-9a-f]{8}")


def dump(state_dir: Path) -> list[str]:
    """Every row of state.db, to prove a refused command stored nothing."""
    conn = sqlite3.connect(state_dir / "state.db")
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def register(cli: Cli, *extra: str, session: str = "tmux:claude") -> str:
    result = cli(
        "job", "register", "--prompt", "write sort_problems.md", "--agent", "claude-code",
        "--agent-session", session, *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert JOB_ID.fullmatch(job_id)
    return job_id


def one_line_error(result: Any, code: int, text: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert result.stderr.startswith("orchestrate: ") and result.stderr.count("\n") == 1
    assert text in result.stderr


def test_seed_quick_reference(cli: Cli) -> None:
    """Seed 001 §6 as written, with `orchestrate job` for `registry.py`."""
    job_id = register(cli, "--timeout", "3600", "--idle-timeout", "120")
    table = cli("job", "list")
    assert table.returncode == 0 and job_id in table.stdout and "pending" in table.stdout
    records = json.loads(cli("job", "list", "--json").stdout)
    assert [r["job_id"] for r in records] == [job_id]
    record = json.loads(cli("job", "get", "--job", job_id).stdout)
    assert record["agent_session"] == "tmux:claude" and record["timeout_sec"] == 3600
    assert record["auth_token"] and "hidden" in record["auth_token"]
    shown = json.loads(cli("job", "get", "--job", job_id, "--show-token").stdout)
    assert len(shown["auth_token"]) >= 40
    done = cli("job", "status", "--job", job_id, "--set", "completed")
    assert done.returncode == 0 and "completed" in done.stdout
    one_line_error(cli("job", "pick", "--agent-session", "tmux:claude"), 3, "no pending job")
    second = register(cli)
    picked = cli("job", "pick", "--agent-session", "tmux:claude")
    assert (picked.returncode, picked.stdout.strip()) == (0, second)
    assert json.loads(cli("job", "get", "--job", second).stdout)["status"] == "running"


def test_publish_moves_a_job_through_its_lifecycle(cli: Cli) -> None:
    """Events published by the agent move the job and show in `job logs`."""
    job_id = register(cli, "--artifact", "sort_problems.md")
    env = {"ORCHESTRATE_JOB": job_id}  # the pane's environment: no --job needed
    started = cli("publish", "--event", "started", "--detail", "booted", env=env)
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["seq"] == 1
    progress = cli(
        "publish", "--event", "progress", "--detail", "half way", "--data", '{"pct": 50}', env=env
    )
    wire = json.loads(progress.stdout)
    assert (wire["seq"], wire["data"]["pct"]) == (2, 50) and "hmac_sig" in wire["data"]
    assert json.loads(cli("job", "get", "--job", job_id).stdout)["status"] == "running"
    assert cli("publish", "--event", "completed", "--detail", "all done", env=env).returncode == 0
    record = json.loads(cli("job", "get", "--job", job_id).stdout)
    assert (record["status"], record["last_seq"]) == ("completed", 3)

    logs = cli("job", "logs", job_id)
    assert logs.returncode == 0
    lines = logs.stdout.splitlines()
    assert "registered" in lines[0]
    assert any("published" in line and "#2 progress" in line for line in lines)
    assert "running -> completed" in lines[-1]
    tail = [
        json.loads(line)
        for line in cli("job", "logs", job_id, "--tail", "2", "--json").stdout.splitlines()
    ]
    assert [e["kind"] for e in tail] == ["published", "status_changed"]
    assert tail[0]["event"]["event"] == "completed"
    everything = cli("job", "logs", job_id, "--tail", "99999999999999999999")
    assert (everything.returncode, everything.stdout) == (0, logs.stdout)
    listing = cli("job", "logs", "--list")
    assert job_id in listing.stdout and "completed" in listing.stdout
    for extra in (("--tail", "2"), (job_id,)):  # were silently ignored
        refused = cli("job", "logs", "--list", *extra)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "--list shows every logged job: give it no JOB_ID and no --tail" in refused.stderr
    why = cli("job", "why", "--job", job_id)
    assert "completed at" in why.stdout and "seq 3" in why.stdout


def test_cancel_resume_and_unsigned_jobs(cli: Cli) -> None:
    job_id = register(cli, "--no-sign")
    assert json.loads(cli("job", "get", "--job", job_id).stdout)["auth_token"] is None
    assert "cancelled" in cli("job", "cancel", "--job", job_id).stdout
    assert "pending" in cli("job", "resume", "--job", job_id).stdout
    assert cli("job", "pick", "--agent-session", "tmux:claude").stdout.strip() == job_id
    unsigned = build_event(job_id, 1, "started").to_bytes().decode()
    assert cli("publish", "--raw", "-", input=unsigned).returncode == 0
    one_line_error(cli("publish", "--raw", "-", input=unsigned), 1, "duplicate seq 1")
    status = cli("job", "list", "--status", "running")
    assert job_id in status.stdout


def test_bad_inputs_are_one_line_and_store_nothing(
    cli: Cli, state_dir: Path, tmp_path: Path
) -> None:
    """Each refusal: one line on stderr, the right exit code, the database unchanged."""
    job_id = register(cli)
    huge_number = '{"a": ' + "9" * 5000 + "}"  # past CPython's 4300-digit int conversion
    (tmp_path / "huge.json").write_text(huge_number)
    (tmp_path / "deep.json").write_text("[" * 100_000)
    assert cli("publish", "--job", job_id, "--event", "started").returncode == 0
    token = json.loads(cli("job", "get", "--job", job_id, "--show-token").stdout)["auth_token"]
    before = dump(state_dir)
    unsigned = build_event(job_id, 2, "progress", "x")
    wrong_version = json.dumps(sign(unsigned, token).to_dict() | {"schema_version": 2})
    cases: list[tuple[tuple[str, ...], dict[str, Any], int, str]] = [
        (("job", "get", "--job", "deadbeef"), {}, 1, "no job 'deadbeef'"),
        (("job", "status", "--job", "deadbeef", "--set", "running"), {}, 1, "no job"),
        (("job", "status", "--job", job_id, "--set", "bogus"), {}, 1, "unknown job status"),
        (("job", "resume", "--job", job_id), {}, 1, "cannot resume from running"),
        (("job", "register", "--prompt", "", "--agent", "a", "--agent-session", "s"), {}, 1,
         "prompt must not be empty"),
        (("job", "pick", "--agent-session", "tmux:nobody"), {}, 3, "no pending job"),
        (("publish", "--job", job_id, "--event", "progress", "--data", "{bad"), {}, 1,
         "--data is not valid JSON"),
        (("publish", "--job", job_id, "--event", "progress", "--data", "[1]"), {}, 1,
         "must be a JSON object"),
        (("publish", "--job", job_id, "--event", "progress", "--data", "@"), {}, 1,
         "--data file name is missing after '@'"),
        (("publish", "--job", job_id, "--event", "progress", "--data", huge_number), {}, 1,
         "--data is not valid JSON: a number has more than 4300 digits"),
        (("publish", "--job", job_id, "--event", "progress", "--data",
          f"@{tmp_path / 'huge.json'}"), {}, 1, "huge.json is not valid JSON: a number has more"),
        (("publish", "--job", job_id, "--event", "progress", "--data",
          f"@{tmp_path / 'deep.json'}"), {}, 1, "deep.json is nested too deeply"),
        (("publish", "--job", job_id, "--event", "progress", "--data",
          json.dumps({"blob": "x" * 40_000})), {}, 1, "limit"),
        (("publish", "--job", job_id, "--event", "finished"), {}, 1, "unknown event"),
        (("publish", "--job", job_id, "--event", "progress", "--detail", "see /home/me/x"), {}, 1,
         "absolute path"),
        (("publish", "--job", "deadbeef", "--event", "started"), {}, 1, "no job"),
        (("publish", "--job", job_id, "--event", "progress"),
         {"env": {"ORCHESTRATE_JOB_TOKEN": "forged-token"}}, 1, "signature mismatch"),
        (("publish", "--raw", "-"), {"input": unsigned.to_bytes().decode()}, 1,
         "missing signature"),
        (("publish", "--raw", "-"), {"input": wrong_version}, 1, "schema_version 2"),
        (("publish", "--raw", "-"), {"input": "not json"}, 1, "not valid JSON"),
    ]  # fmt: skip
    with ThreadPoolExecutor(4) as pool:  # independent refusals: run them side by side
        results = list(pool.map(lambda case: cli(*case[0], **case[1]), cases))
    for (_args, _kwargs, code, text), result in zip(cases, results, strict=True):
        one_line_error(result, code, text)
    assert dump(state_dir) == before

    assert cli("job", "status", "--job", job_id, "--set", "completed").returncode == 0
    after = dump(state_dir)
    one_line_error(
        cli("job", "status", "--job", job_id, "--set", "running"), 1, "completed to running"
    )
    one_line_error(
        cli("publish", "--job", job_id, "--event", "progress"), 1, "after the job was completed"
    )
    assert dump(state_dir) == after


@pytest.mark.parametrize(
    ("flags", "text"),
    [
        (("--timeout", str(2**63 - 1)), "--timeout must be at most 2592000 seconds (30 days)"),
        (("--timeout", "9" * 23), "--timeout must be at most 2592000 seconds"),
        (("--idle-timeout", "9" * 23), "--idle-timeout must be at most 2592000 seconds"),
    ],
)
def test_a_timeout_past_30_days_is_refused(
    cli: Cli, state_dir: Path, flags: tuple[str, ...], text: str
) -> None:
    """A timeout too large for a lease in SQLite used to register (then crash every
    `job pick` of its session) or crash `job register` itself with OverflowError."""
    job_id = register(cli)
    before = dump(state_dir)
    one_line_error(
        cli("job", "register", "--prompt", "p", "--agent", "a", "--agent-session",
            "tmux:claude", *flags),
        1, text,
    )  # fmt: skip
    assert dump(state_dir) == before
    picked = cli("job", "pick", "--agent-session", "tmux:claude")
    assert (picked.returncode, picked.stdout.strip()) == (0, job_id)


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_prompt_file_that_is_not_utf8_is_refused(
    cli: Cli, state_dir: Path, tmp_path: Path, source: str
) -> None:
    """Bytes that are not UTF-8 in --prompt-file are one line, not a UnicodeDecodeError."""
    register(cli)
    before = dump(state_dir)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe fix the tests")
    where = str(bad) if source == "file" else "-"
    with bad.open("rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "app", "job", "register", "--prompt-file", where,
             "--agent", "a", "--agent-session", "s"],
            stdin=stdin, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    shown = str(bad) if source == "file" else "<stdin>"
    one_line_error(result, 1, f"--prompt-file {shown} is not UTF-8 text (bad byte at offset 0)")
    assert dump(state_dir) == before


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "99999999999999999999"])
def test_a_busy_timeout_setting_that_is_not_milliseconds_is_one_line(
    cli: Cli, state_dir: Path, value: str
) -> None:
    """ORCHESTRATE_BUSY_TIMEOUT_MS=abc was a ValueError traceback from every command."""
    register(cli)
    before = dump(state_dir)
    result = cli("job", "list", env={"ORCHESTRATE_BUSY_TIMEOUT_MS": value})
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        "orchestrate: ORCHESTRATE_BUSY_TIMEOUT_MS must be a whole number of milliseconds "
        f"from 0 to 3600000 (an hour), got {value!r}\n"
    )
    assert dump(state_dir) == before
    assert cli("job", "list", env={"ORCHESTRATE_BUSY_TIMEOUT_MS": " 250 "}).returncode == 0


def test_publish_stays_light(state_dir: Path, cli: Cli) -> None:
    """An agent's `orchestrate publish` never imports the TUI, tmux, Spark or MQTT stacks."""
    job_id = register(cli)
    code = (
        "import sys\n"
        "from app.cli import main\n"
        "try:\n"
        f"    main(['publish', '--job', '{job_id}', '--event', 'started'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "heavy = {'textual', 'libtmux', 'pyspark', 'paho', 'rich', 'pyarrow', 'pandas'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"ORCHESTRATE_HOME": str(state_dir), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_broker_down_keeps_the_local_record(cli: Cli) -> None:
    """With a broker block but no broker, the event is recorded and the failure is one line."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    job_id = register(cli, "--broker", "127.0.0.1", "--port", str(port))
    record = json.loads(cli("job", "get", "--job", job_id).stdout)
    assert record["broker"]["host"] == "127.0.0.1" and record["broker"]["port"] == port
    result = cli("publish", "--job", job_id, "--event", "started", "--attempts", "1")
    assert result.returncode == 1
    assert "recorded locally" in result.stderr and result.stderr.count("\n") == 1
    assert json.loads(cli("job", "get", "--job", job_id).stdout)["last_seq"] == 1


@pytest.mark.parametrize("flags", [("--port", "1883")])
def test_port_without_broker_is_refused(cli: Cli, flags: tuple[str, ...]) -> None:
    result = cli(
        "job", "register", "--prompt", "p", "--agent", "a", "--agent-session", "s", *flags
    )  # fmt: skip
    one_line_error(result, 1, "--port needs --broker")


@pytest.mark.parametrize("flags", [("--broker", ""), ("--broker", " ", "--port", "1883")])
def test_an_empty_broker_is_refused_as_such(
    cli: Cli, state_dir: Path, flags: tuple[str, ...]
) -> None:
    """Not "--port needs --broker HOST" (it was given), nor a job with no broker."""
    register(cli)
    before = dump(state_dir)
    result = cli(
        "job", "register", "--prompt", "p", "--agent", "a", "--agent-session", "s", *flags
    )  # fmt: skip
    one_line_error(result, 1, "--broker must not be empty")
    assert dump(state_dir) == before
