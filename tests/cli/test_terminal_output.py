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
import unicodedata
from pathlib import Path

import pytest

from app.terminal.output import ShownFormatter, shown
from registry.jobs import Registry

HOSTILE = "run \x9b6n then \x1b]0;pwned\x07 and \u202eexe.txt\u2028done \x85"


def raw_hidden(text: str) -> list[str]:
    """What a terminal would act on or that reorders text, by Unicode's own word for it
    (not the product's list): controls, format characters (bidi controls among them),
    line and paragraph separators, lone surrogates; newlines and tabs aside."""
    return [
        char
        for char in text.replace("\n", "").replace("\t", "")
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")
    ]


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


def test_an_arabic_letter_mark_in_a_prompt_is_escaped_by_job_get(cli, state_dir: Path) -> None:
    """U+061C (ARABIC LETTER MARK, a bidi control) reached the terminal raw through
    `job get`: the CLI's copy of the hidden class lacked it (issue 32)."""
    prompt = "deploy \u061cgnirts then \u2067tag\u2069 \U000e0041"
    job = Registry.open(state_dir).register(prompt, "agent", "alpha")
    piped = cli("job", "get", "--job", job.job_id)
    assert piped.returncode == 0, piped.stderr
    assert raw_hidden(piped.stdout) == [] and "\\u061c" in piped.stdout
    assert json.loads(piped.stdout)["prompt"] == prompt
    printed = at_a_terminal(state_dir, "job", "get", "--job", job.job_id).decode()
    assert raw_hidden(printed.replace("\r", "")) == [] and "\\u061c" in printed
    assert "\\udb40\\udc41" in printed  # a tag character, as JSON spells it


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
