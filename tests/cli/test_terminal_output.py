"""What the CLI prints never acts on the operator's terminal: agent text with C1 controls,
bidi overrides or escape sequences comes out escaped in JSON and as stand-ins in tables."""

from __future__ import annotations

import json
from pathlib import Path

from app.terminal.output import HIDDEN
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
