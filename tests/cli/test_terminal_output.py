"""What the CLI prints never acts on the operator's terminal: agent text with C1 controls,
bidi overrides or escape sequences comes out escaped in JSON, as stand-ins in tables, and
shown as escapes in error and log lines."""

from __future__ import annotations

import json
import logging
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from app.terminal.output import HIDDEN, ShownFormatter, shown
from registry.jobs import Registry

HOSTILE = "run \x9b6n then \x1b]0;pwned\x07 and \u202eexe.txt\u2028done \x85"


def raw_hidden(text: str) -> list[str]:
    return HIDDEN.findall(text.replace("\n", ""))


def test_json_output_escapes_what_a_terminal_would_act_on(cli, state_dir: Path) -> None:
    job = Registry.open(state_dir).register(HOSTILE, "agent", "alpha")
    for args in (("job", "get", "--job", job.job_id), ("job", "list", "--json")):
        result = cli(*args)
        assert result.returncode == 0, result.stderr
        assert raw_hidden(result.stdout) == [] and "\x1b" not in result.stdout
        assert "\\u009b" in result.stdout and "\\u202e" in result.stdout
        parsed = json.loads(result.stdout)
        record = parsed if isinstance(parsed, dict) else parsed[0]
        assert record["prompt"] == HOSTILE  # the same JSON, only spelled safely


def test_bus_messages_print_escaped(cli) -> None:
    assert cli("msg", "send", "note", json.dumps({"text": HOSTILE})).returncode == 0
    polled = cli("msg", "poll")
    assert polled.returncode == 0 and raw_hidden(polled.stdout) == []
    assert json.loads(polled.stdout.splitlines()[0])["payload"]["text"] == HOSTILE


def test_tables_show_stand_ins(cli, state_dir: Path) -> None:
    Registry.open(state_dir).register(HOSTILE, "agent", "alpha")
    table = cli("job", "list")
    assert table.returncode == 0 and raw_hidden(table.stdout) == []


def test_a_label_with_a_c1_or_bidi_control_is_refused(cli) -> None:
    for bad in ("a\x9bb", "a\u202eb"):
        result = cli("job", "register", "--prompt", "p", "--agent", bad, "--agent-session", "s")
        assert result.returncode == 1 and "one word of printable characters" in result.stderr


def at_a_terminal(state_dir: Path, *args: str) -> bytes:
    """Run `orchestrate ARGS` with stdout and stderr on a pseudo-terminal, as a person
    runs it (click strips some sequences when it writes to a pipe); all it wrote."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "ORCHESTRATE_HOME": str(state_dir)}
    with subprocess.Popen(
        [sys.executable, "-m", "app", *args], stdin=subprocess.DEVNULL, stdout=terminal,
        stderr=terminal, env=env, close_fds=True,
    ) as process:  # fmt: skip
        os.close(terminal)
        output = bytearray()
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the process closed its side
                break
            if not chunk:
                break
            output += chunk
        process.wait(timeout=60)
    os.close(controller)
    return bytes(output)


@pytest.mark.parametrize(
    ("args", "echo"),
    [
        # a domain error that quotes a path
        (["msg", "send", "note", f"@/nonexistent/{HOSTILE}"], "cannot read payload file"),
        # a usage error (click's) that quotes a value
        (
            [
                "job",
                "register",
                "--prompt-file",
                f"/nonexistent/{HOSTILE}",
                "--agent",
                "a",
                "--agent-session",
                "s",
            ],
            "--prompt-file",
        ),
        (["session", "stop", HOSTILE, "--mode", "hard"], "no session"),
    ],
)
def test_error_lines_show_what_they_quote_escaped(
    state_dir: Path, args: list[str], echo: str
) -> None:
    """An error quotes the value it refuses: at a terminal its escape sequences, C1 and
    bidi controls are shown (^[, \\x9b, \\u202e), one line, never acted on."""
    output = at_a_terminal(state_dir, *args).decode("utf-8", "replace")
    assert echo in output
    assert raw_hidden(output.replace("\r", "")) == [] and "\x1b" not in output
    assert output.rstrip("\r\n").count("\n") == 0


def test_log_lines_show_what_they_quote_escaped() -> None:
    """A warning that quotes a topic or a reason from the network: shown escaped."""
    record = logging.LogRecord("x", logging.WARNING, "", 0, "refused %s", (HOSTILE,), None)
    line = ShownFormatter("%(levelname)s %(message)s").format(record)
    assert line == f"WARNING refused {shown(HOSTILE)}" and raw_hidden(line) == []
    assert shown(HOSTILE) == "run \\x9b6n then ^[]0;pwned^G and \\u202eexe.txt\\u2028done \\x85"
