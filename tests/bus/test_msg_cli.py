"""`orchestrate msg` and `orchestrate export` as a user runs them, bad input included."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bus.db import connect
from tests.ci import missing_part


def lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def digest(state_dir: Path) -> str:
    """A fingerprint of everything stored, to prove a failed command changed nothing."""
    conn = sqlite3.connect(state_dir / "state.db")
    dump = "\n".join(conn.iterdump())
    conn.close()
    return hashlib.sha256(dump.encode()).hexdigest()


def test_send_then_poll_shows_the_message(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    sent = cli("msg", "send", "status", '{"progress":0.5}')
    assert sent.returncode == 0, sent.stderr
    polled = cli("msg", "poll")
    assert [m["payload"] for m in lines(polled.stdout)] == [{"progress": 0.5}]
    assert polled.stderr == ""


def test_ack_moves_the_cursor_for_that_agent_only(cli) -> None:  # type: ignore[no-untyped-def]
    cli("msg", "send", "a", "1")
    cli("msg", "send", "b", "2")
    assert cli("msg", "ack", "1", "--agent", "w1").returncode == 0
    assert [m["payload"] for m in lines(cli("msg", "poll", "--agent", "w1").stdout)] == [2]
    assert len(lines(cli("msg", "poll", "--agent", "w2").stdout)) == 2


def test_payload_from_file_and_addressed_message(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    payload = tmp_path / "p.json"
    payload.write_text('{"step": "tests"}')
    assert cli("msg", "send", "hello", "{}", "--from", "worker-1").returncode == 0
    sent = cli("msg", "send", "cmd", f"@{payload}", "--to", "worker-1")
    assert sent.returncode == 0, sent.stderr
    got = lines(cli("msg", "poll", "--agent", "worker-1").stdout)
    assert got[-1]["payload"] == {"step": "tests"} and got[-1]["to_agent"] == "worker-1"
    assert lines(cli("msg", "poll", "--agent", "other").stdout)[-1]["type"] == "hello"


def test_follow_prints_new_messages_as_json_lines(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    cli("msg", "send", "old", "1")
    env = {**os.environ, "ORCHESTRATE_HOME": str(state_dir)}
    follower = subprocess.Popen(
        [sys.executable, "-m", "app", "msg", "follow", "--task", "job1", "--count", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert follower.stderr is not None
        follower.stderr.readline()  # "following ..." means it has started at "now"
        cli("msg", "send", "other", "2", "--correlation-id", "job2")
        cli("msg", "send", "progress", "3", "--correlation-id", "job1")
        out, _err = follower.communicate(timeout=20)
    finally:
        follower.kill()
    assert [m["payload"] for m in lines(out)] == [3]


@pytest.mark.parametrize("since", ["-1", str(2**63), "99999999999999999999"])
def test_follow_since_a_seq_no_bus_can_hold_is_a_usage_error(cli, since: str) -> None:  # type: ignore[no-untyped-def]
    """Seqs are SQLite's signed 64-bit rowids; past them was an OverflowError traceback."""
    result = cli("msg", "follow", "--since", since, "--count", "1", timeout=20)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "--since" in result.stderr
    assert "0<=x<=9223372036854775807" in result.stderr and result.stdout == ""


def test_export_writes_jsonl(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    cli("msg", "send", "a", '{"x": 1}')
    assert cli("export").returncode == 0
    exported = lines((state_dir / "export" / "bus.jsonl").read_text())
    assert exported[0]["payload"] == {"x": 1}
    assert cli("export").returncode == 0
    assert len((state_dir / "export" / "bus.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("msg", "send", "status", "{bad json"), "not valid JSON"),
        (("msg", "send", "status", "@/does/not/exist.json"), "cannot read payload file"),
        (("msg", "send", "status", "@"), "payload file name is missing after '@'"),
        (
            ("msg", "send", "status", "{}", "--to", "nobody-knows-me"),
            "unknown agent 'nobody-knows-me'",
        ),
        (("msg", "ack", "999"), "no message with seq 999"),
        # empty used to mean the default agent "hq": acking, or reading, hq's cursor
        (("msg", "ack", "1", "--agent", ""), "--agent must not be empty"),
        (("msg", "poll", "--agent", ""), "--agent must not be empty"),
        (("msg", "send", "status", "{}", "--from", ""), "--from must not be empty"),
    ],
)
def test_bad_input_is_one_line_nonzero_and_changes_nothing(
    cli, state_dir: Path, args, expected
) -> None:  # type: ignore[no-untyped-def]
    cli("msg", "send", "seed", '{"keep": true}')
    before = digest(state_dir)
    result = cli(*args)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and expected in result.stderr
    assert result.stdout == ""
    assert digest(state_dir) == before


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"a": ' + "9" * 5000 + "}", "is not valid JSON: a number has more than 4300 digits"),
        ("[" * 100_000, "is nested too deeply"),
    ],
    ids=["huge-int", "deep"],
)
@pytest.mark.parametrize("from_file", [False, True])
def test_json_that_python_cannot_read_is_one_line(  # type: ignore[no-untyped-def]
    cli, state_dir: Path, tmp_path: Path, content: str, expected: str, from_file: bool
) -> None:
    """An integer past CPython's digit limit (a ValueError, not a JSONDecodeError) and
    deep nesting (a RecursionError) are refused like any other bad JSON."""
    cli("msg", "send", "seed", '{"keep": true}')
    before = digest(state_dir)
    payload = tmp_path / "payload.json"
    payload.write_text(content)
    result = cli("msg", "send", "t", f"@{payload}" if from_file else content)
    assert result.returncode == 1, result.stderr
    source = f"payload file {payload}" if from_file else "payload"
    assert result.stderr == f"orchestrate: {source} {expected}\n"
    assert result.stdout == ""
    assert digest(state_dir) == before


def test_a_database_that_is_not_sqlite(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    state_dir.mkdir(parents=True)
    (state_dir / "state.db").write_text("hello, not a database")
    result = cli("msg", "poll")
    assert result.returncode == 1
    assert "not an orchestrate database" in result.stderr and result.stderr.count("\n") == 1
    assert (state_dir / "state.db").read_text() == "hello, not a database"


def test_a_database_from_a_newer_orchestrate(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    connect(state_dir / "state.db").execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    before = digest(state_dir)
    result = cli("msg", "send", "t", "{}")
    assert result.returncode == 1 and "newer than this orchestrate" in result.stderr
    assert digest(state_dir) == before


@pytest.mark.parametrize(
    ("key", "commands"),
    [
        ("schema_version", [("job", "list"), ("msg", "poll")]),
        ("registry_schema_version", [("job", "list")]),  # the bus alone is still fine
    ],
)
def test_a_database_whose_schema_version_is_not_a_number(  # type: ignore[no-untyped-def]
    cli, state_dir: Path, key: str, commands: list[tuple[str, ...]]
) -> None:
    """meta holding 'abc' was a ValueError traceback; it is not a database we wrote."""
    assert cli("job", "list").returncode == 0  # bus and registry tables both built
    conn = sqlite3.connect(state_dir / "state.db")
    with conn:
        conn.execute("UPDATE meta SET value = 'abc' WHERE key = ?", (key,))
    conn.close()
    before = digest(state_dir)
    for args in commands:
        result = cli(*args)
        assert result.returncode == 1, result.stderr
        assert result.stderr.count("\n") == 1 and result.stdout == ""
        assert f"is not an orchestrate database (meta {key} is 'abc'" in result.stderr
    assert digest(state_dir) == before


def test_a_locked_database_beyond_busy_timeout(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    holder = connect(state_dir / "state.db")
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = cli("msg", "send", "t", "{}", env={"ORCHESTRATE_BUSY_TIMEOUT_MS": "200"})
    finally:
        holder.execute("ROLLBACK")
    assert result.returncode == 1 and "locked by another process" in result.stderr
    assert "(waited 200 ms)" in result.stderr  # the wait in effect, not the 5000 ms default
    assert result.stderr.count("\n") == 1


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user can traverse (pytest's tmp is root-only)."""
    path = Path(tempfile.mkdtemp(prefix="orch-ro-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_nobody(*args: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    prefix = (
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    )
    return subprocess.run(
        [*prefix, sys.executable, "-m", "app", "--state-dir", str(state_dir), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )


def test_a_read_only_state_dir(shared_dir: Path) -> None:
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        missing_part("setpriv is not installed (it drops root privileges for this test)")
    state = shared_dir / "state"
    connect(state / "state.db").close()
    (state / "state.db").chmod(0o644)
    state.chmod(0o755)  # readable, but not writable by anyone but its owner
    before = digest(state)
    result = as_nobody("msg", "send", "t", "{}", state_dir=state)
    assert result.returncode == 1, result
    assert result.stderr.startswith("orchestrate: ") and result.stderr.count("\n") == 1
    assert digest(state) == before
    shared_dir.joinpath("locked").mkdir(mode=0o700)
    uncreatable = as_nobody("msg", "poll", state_dir=shared_dir / "locked" / "x")
    assert uncreatable.returncode == 1 and "cannot create state directory" in uncreatable.stderr


def test_a_registered_job_is_a_known_recipient(cli) -> None:  # type: ignore[no-untyped-def]
    job_id = cli("job", "register", "--prompt", "p", "--agent", "a", "--agent-session", "s")
    assert job_id.returncode == 0, job_id.stderr
    sent = cli("msg", "send", "cmd", '{"action": "stop"}', "--to", job_id.stdout.strip())
    assert sent.returncode == 0, sent.stderr


def test_a_payload_that_cannot_be_read_is_said_on_stderr(cli, state_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """A missing blob still prints the message (payload null, payload_error), and says
    so on stderr: a consumer would otherwise ack a null payload with no sign."""
    assert cli("msg", "send", "t", json.dumps({"text": "x" * 10_000})).returncode == 0
    for blob in (state_dir / "blobs").iterdir():
        blob.unlink()
    polled = cli("msg", "poll")
    assert polled.returncode == 0
    (line,) = polled.stdout.splitlines()
    assert json.loads(line)["payload_error"] == "blob_missing"
    assert polled.stderr.startswith("orchestrate: message 1: its payload file sha256-")
    assert polled.stderr.endswith(" is missing from blobs/\n")
