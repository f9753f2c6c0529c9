"""`--json` is taken by every command that prints records (issue 32: `job list` took it,
`job get` refused it though it printed JSON anyway). Real processes throughout."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.tmux.driver import TmuxDriver

Cli = Callable[..., Any]

RECORD_COMMANDS = (
    ("job", "get"),
    ("job", "list"),
    ("job", "logs"),
    ("session", "list"),
    ("session", "get"),
    ("review", "list"),
    ("review", "show"),
    ("broker", "status"),
    ("msg", "send"),
    ("msg", "poll"),
    ("msg", "ack"),
    ("msg", "follow"),
    ("publish",),
    ("subscribe",),
    ("ingest",),
    ("status",),
    ("doctor",),
    ("gc",),
    ("history", "show"),
)
"""Every command whose output is records (`orchestrate --help`, app/commands/*)."""


@pytest.mark.parametrize("command", RECORD_COMMANDS, ids=" ".join)
def test_every_command_that_prints_records_takes_json(cli: Cli, command: tuple[str, ...]) -> None:
    shown = cli(*command, "--help")
    assert shown.returncode == 0, shown.stderr
    assert "--json" in shown.stdout


def json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines()]


def test_json_only_commands_print_the_same_with_and_without_json(cli: Cli) -> None:
    """The flag is accepted and changes nothing where JSON is the only form."""
    registered = cli(
        "job", "register", "--prompt", "p", "--agent", "demo", "--agent-session", "s", "--no-sign"
    )
    assert registered.returncode == 0, registered.stderr
    job_id = registered.stdout.strip()
    got = cli("job", "get", "--job", job_id, "--json")
    assert got.returncode == 0, got.stderr  # was exit 2: "No such option: --json"
    assert json.loads(got.stdout) == json.loads(cli("job", "get", "--job", job_id).stdout)
    assert cli("job", "pick", "--agent-session", "s").stdout.strip() == job_id

    started = cli("publish", "--job", job_id, "--event", "started", "--json")
    assert started.returncode == 0, started.stderr
    assert json_lines(started.stdout)[0]["event"] == "started"
    completed = cli("publish", "--job", job_id, "--event", "completed")
    assert completed.returncode == 0, completed.stderr
    followed = cli("subscribe", "--job", job_id, "--json", timeout=30)
    assert followed.returncode == 0, followed.stderr
    assert [e["event"] for e in json_lines(followed.stdout)] == ["started", "completed"]

    sent = cli("msg", "send", "note", '{"a": 1}', "--json")
    assert sent.returncode == 0, sent.stderr
    seq = json_lines(sent.stdout)[0]["seq"]
    polled = cli("msg", "poll", "--json", "--limit", "100")
    assert polled.returncode == 0, polled.stderr
    assert json_lines(polled.stdout) == json_lines(cli("msg", "poll", "--limit", "100").stdout)
    assert seq in [m["seq"] for m in json_lines(polled.stdout)]
    tail = cli("msg", "follow", "--json", "--since", str(seq - 1), "--count", "1", timeout=30)
    assert tail.returncode == 0, tail.stderr
    assert [m["seq"] for m in json_lines(tail.stdout)] == [seq]
    acked = cli("msg", "ack", str(seq), "--json")
    assert acked.returncode == 0, acked.stderr
    assert json_lines(acked.stdout) == [{"agent": "hq", "last_acked_seq": seq}]


def test_session_get_prints_the_record_session_list_holds(cli: Cli) -> None:
    """`session get LABEL` (new: only `session list` showed a session's record)."""
    socket = {"ORCHESTRATE_TMUX_SOCKET": f"orch_test_{uuid.uuid4().hex[:10]}"}
    try:
        assert cli("session", "create", "alpha", env=socket).returncode == 0
        got = cli("session", "get", "alpha", "--json", env=socket)
        assert got.returncode == 0, got.stderr
        listed = json.loads(cli("session", "list", "--json", env=socket).stdout)
        assert [json.loads(got.stdout)] == listed
        assert json.loads(got.stdout)["state"] == "running"
        missing = cli("session", "get", "nobody", env=socket)
        assert (missing.returncode, missing.stderr) == (1, "orchestrate: no session 'nobody'\n")
    finally:
        TmuxDriver(socket["ORCHESTRATE_TMUX_SOCKET"]).server.cmd("kill-server")
        base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
        (base / f"tmux-{os.getuid()}" / socket["ORCHESTRATE_TMUX_SOCKET"]).unlink(missing_ok=True)
