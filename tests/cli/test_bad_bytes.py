"""Bytes and JSON (issue 19, item 6): bad text is one line and an exit code, never a traceback.

Every command, every option: an argument that is not UTF-8 (Python hands it
over as a lone surrogate), an option value that looks like an option, a file
that is not UTF-8, JSON with a key given twice or a lone ``\\udXXX`` escape,
a blank message type. Each is one line on stderr, exit 1 or 2, and nothing
stored changes. All as real `orchestrate` processes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import pytest

from app.cli import cli as root
from registry.events import build_event
from registry.jobs import Registry
from registry.signing import sign
from tests.conftest import Result, run_cli

Cli = Callable[..., Result]
NOT_UTF8 = "\udcff"  # what Python makes of the byte 0xff on a command line (and passes back)
# If a refusal ever let a command through, it must not touch the user's tmux server.
PRIVATE_TMUX = {"ORCHESTRATE_TMUX_SOCKET": "orchestrate-test-bad-bytes"}


def dump(state_dir: Path) -> list[str]:
    """Every row of state.db, to prove a refused command stored nothing."""
    with sqlite3.connect(state_dir / "state.db") as conn:
        return list(conn.iterdump())


def one_line(result: Result, codes: tuple[int, ...], text: str) -> None:
    assert result.returncode in codes, result
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("orchestrate") and result.stderr.count("\n") == 1, result
    assert text in result.stderr, result.stderr


def commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under ``command`` with its argv path."""
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            yield from commands(sub, (*path, name))


def value_options() -> list[tuple[str, ...]]:
    """(*command path, option) for every option of every command that takes a value."""
    found = []
    for path, command in commands(root):
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_flag and not param.count:
                found.append((*path, param.opts[0]))
    return found


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command from a scratch directory: should a refusal ever let one
    through, what it writes (`broker config --dir -v`) lands there."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def stored(cli: Cli, state_dir: Path) -> str:
    """A registered job (so there is something to damage); its id."""
    result = cli("job", "register", "--prompt", "p", "--agent", "a", "--agent-session", "s")
    assert result.returncode == 0, result
    return result.stdout.strip()


def run_all(cases: list[tuple[str, ...]], state_dir: Path, **kwargs: Any) -> list[Result]:
    """Independent refusals, two processes at a time."""
    env = {**PRIVATE_TMUX, **kwargs.pop("env", {})}
    with ThreadPoolExecutor(2) as pool:
        return list(
            pool.map(lambda args: run_cli(*args, state_dir=state_dir, env=env, **kwargs), cases)
        )


def test_the_sweep_covers_the_commands_named_in_the_issue() -> None:
    """The sweep below walks the real command tree; make sure it is not empty."""
    options = {" ".join(case) for case in value_options()}
    for named in ("msg send --id", "job register --prompt", "job register --agent",
                  "job register --broker", "publish --detail", "publish --data",
                  "submit --prompt", "submit --prompt-file", "--state-dir"):  # fmt: skip
        assert named in options, named


@pytest.mark.slow  # a process per option of every command: about a minute each
def test_every_option_value_that_is_not_utf8_is_one_line(state_dir: Path, stored: str) -> None:
    """`--OPTION <byte 0xff>` for every option of every command: exit 2, one line."""
    before = dump(state_dir)
    cases = [(*case, NOT_UTF8) for case in value_options()]
    for case, result in zip(cases, run_all(cases, state_dir), strict=True):
        one_line(result, (2,), f"{case[-2]} is not UTF-8 text (byte 0xff at offset 0)")
    assert dump(state_dir) == before


@pytest.mark.slow  # a process per option of every command: about a minute each
def test_every_option_value_that_looks_like_an_option_is_one_line(
    state_dir: Path, stored: str
) -> None:
    """`--broker -x`, `--agent -v`, ... for every option of every command: exit 2."""
    before = dump(state_dir)
    cases = [(*case, "-v") for case in value_options()]
    for case, result in zip(cases, run_all(cases, state_dir), strict=True):
        one_line(result, (2,), f"{case[-2]} needs a value, not the option-like '-v'")
    assert dump(state_dir) == before


def test_every_positional_word_that_is_not_utf8_is_one_line(state_dir: Path, stored: str) -> None:
    """A command name, a message type, a payload, a label, a job id: exit 2, one line."""
    before = dump(state_dir)
    # `orchestrate hook` runs inside an agent's turn and never fails it: it is tested
    # for bad payloads in tests/agents/test_osc_and_hooks.py.
    cases = [(*path, NOT_UTF8) for path, _command in commands(root) if path[:1] != ("hook",)]
    cases += [
        ("msg", "send", "t", f'{{"a": "{NOT_UTF8}"}}'),
        ("msg", "send", f"st{NOT_UTF8}tus", "{}"),
        ("job", "logs", f"{stored[:4]}{NOT_UTF8}"),
        ("session", "create", f"lab{NOT_UTF8}el"),
        ("answer", "--job", stored, f"y{NOT_UTF8}s"),
    ]
    for result in run_all(cases, state_dir):
        one_line(result, (2,), "is not UTF-8 text (byte 0xff at offset")
    assert dump(state_dir) == before


def test_the_named_cases_from_the_issue(cli: Cli, state_dir: Path, stored: str) -> None:
    """The issue's own list, spelled out."""
    before = dump(state_dir)
    bad = f"x{NOT_UTF8}y"
    cases = [
        ("msg", "send", bad, "{}"),
        ("msg", "send", "t", bad),
        ("msg", "send", "t", "{}", "--id", bad),
        ("job", "register", "--prompt", bad, "--agent", "a", "--agent-session", "s"),
        ("job", "register", "--prompt", "p", "--agent", bad, "--agent-session", "s"),
        ("publish", "--job", stored, "--event", "progress", "--detail", bad),
        ("publish", "--job", stored, "--event", "progress", "--data", bad),
        ("submit", "--prompt", bad, "--agent", "demo", "--agent-session", "s", "--no-wait"),
    ]
    for result in run_all(cases, state_dir):
        one_line(result, (2,), "is not UTF-8 text (byte 0xff at offset 1)")
    for flags, named in [
        (("--broker", "-x"), "--broker"),
        (("--agent", "-v"), "--agent"),
        (("--agent-session", "--no-sign"), "--agent-session"),
    ]:
        args = {"--prompt": "p", "--agent": "a", "--agent-session": "s"}
        args.pop(flags[0], None)
        line = [word for pair in args.items() for word in pair]
        one_line(cli("job", "register", *line, *flags), (2,), f"{named} needs a value")
    assert dump(state_dir) == before


def test_an_option_like_value_given_on_purpose_is_taken(cli: Cli, state_dir: Path) -> None:
    """`--prompt=-p` says it means it; a negative number and '-' (stdin) are values."""
    job_id = cli("job", "register", "--prompt=-p", "--agent", "a", "--agent-session", "s")
    assert job_id.returncode == 0, job_id
    assert Registry.open(state_dir).get(job_id.stdout.strip()).prompt == "-p"
    detail = cli("publish", "--job", job_id.stdout.strip(), "--event", "started",
                 "--detail", "- first step, then -x")  # fmt: skip
    assert detail.returncode == 0, detail
    one_line(cli("msg", "follow", "--since", "-1"), (2,), "-1 is not in the range")
    stdin = cli("job", "register", "--prompt-file", "-", "--agent", "a", "--agent-session", "s",
                input="from stdin")  # fmt: skip
    assert stdin.returncode == 0, stdin


def test_an_environment_variable_that_is_not_utf8_is_one_line(
    cli: Cli, state_dir: Path, stored: str
) -> None:
    """ORCHESTRATE_JOB (publish's --job) and the MQTT_* settings; never echoing the value."""
    before = dump(state_dir)
    for name in ("ORCHESTRATE_JOB", "MQTT_PASSWORD", "ORCHESTRATE_JOB_TOKEN"):
        result = cli("publish", "--event", "started", env={name: f"secret{NOT_UTF8}"})
        one_line(result, (1,), f"environment variable {name} is not UTF-8 text")
        assert "secret" not in result.stderr
    assert dump(state_dir) == before


def test_files_that_are_not_utf8(cli: Cli, state_dir: Path, stored: str, tmp_path: Path) -> None:
    """@payload files, --data files, --raw files, prompt files for `submit` too."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"text": "caf\xe9"}')
    before = dump(state_dir)
    cases: list[tuple[tuple[str, ...], str]] = [
        (("msg", "send", "t", f"@{bad}"), "is not UTF-8 text"),
        (("publish", "--job", stored, "--event", "progress", "--data", f"@{bad}"),
         "is not UTF-8 text"),
        (("publish", "--raw", str(bad)), "event is not UTF-8 (bad byte at offset 13)"),
        (("job", "register", "--prompt-file", str(bad), "--agent", "a", "--agent-session", "s"),
         "is not UTF-8 text (bad byte at offset 13)"),
        (("submit", "--prompt-file", str(bad), "--agent", "demo", "--agent-session", "s",
          "--no-wait"), "is not UTF-8 text (bad byte at offset 13)"),
    ]  # fmt: skip
    results = run_all([args for args, _text in cases], state_dir)
    for (_args, text), result in zip(cases, results, strict=True):
        one_line(result, (1,), text)
    assert dump(state_dir) == before


@pytest.mark.parametrize(
    ("args", "env", "text"),
    [
        (("--broker=-x",), {}, "broker host must be an IP address or a host name, got '-x'"),
        (("--broker", "a b"), {}, "broker host must be"),
        (("--broker", "h\x1b]0;x\x07"), {}, "got 'h\\x1b]0;x\\x07'"),
        ((), {"MQTT_BROKER": "-x"}, "MQTT_BROKER must be an IP address or a host name"),
    ],
)
def test_a_broker_host_that_names_no_host_is_one_line(
    cli: Cli, state_dir: Path, stored: str, args: tuple[str, ...], env: dict[str, str], text: str
) -> None:
    """--broker=-x (given on purpose, past the option-like check) or MQTT_BROKER=-x was
    stored as the job's broker; a space or an escape sequence too."""
    before = dump(state_dir)
    result = cli("job", "register", "--prompt", "p", "--agent", "a", "--agent-session", "s",
                 *args, env=env)  # fmt: skip
    one_line(result, (1,), text)
    assert dump(state_dir) == before


@pytest.mark.parametrize(
    ("toml", "text"),
    [
        (b'[agents.mine]\ncommand = "caf\xe9"\n', "not valid UTF-8 TOML"),
        (b'[agents.mine]\ncommand = "a"\ncommand = "b"\n', "Cannot overwrite a value"),
    ],
    ids=["not-utf8", "key-twice"],
)
def test_an_agents_toml_that_is_not_utf8_or_repeats_a_key(
    cli: Cli, state_dir: Path, stored: str, toml: bytes, text: str
) -> None:
    """The user's agents config is a file like any other: one line, exit 1, no job."""
    (state_dir / "agents.toml").write_bytes(toml)
    before = dump(state_dir)
    result = cli("submit", "--prompt", "p", "--agent", "mine", "--agent-session", "s",
                 "--no-wait", env=PRIVATE_TMUX)  # fmt: skip
    one_line(result, (1,), text)
    assert "agents.toml" in result.stderr
    assert dump(state_dir) == before


def test_json_with_a_duplicate_key_or_a_lone_surrogate_is_refused(
    cli: Cli, state_dir: Path, stored: str, tmp_path: Path
) -> None:
    """Everywhere JSON comes from a person or the wire: payloads, --data, @files, --raw."""
    token = Registry.open(state_dir).get(stored).auth_token
    assert token
    dup_file = tmp_path / "dup.json"
    dup_file.write_text('{"a": 1, "a": 2}')
    raw = sign(build_event(stored, 1, "progress", "x"), token).to_bytes().decode()
    raw_dup = raw[:-1] + ',"seq":1}'  # seq given twice: the signed one and another
    surrogate = '{"a": "\\udc00"}'
    before = dump(state_dir)
    cases: list[tuple[tuple[str, ...], dict[str, Any], str]] = [
        (("msg", "send", "t", '{"a": 1, "a": 2}'), {}, "duplicate key 'a'"),
        (("msg", "send", "t", f"@{dup_file}"), {}, "duplicate key 'a'"),
        (("msg", "send", "t", '[{"b": {"c": 1, "c": 1}}]'), {}, "duplicate key 'c'"),
        (("publish", "--job", stored, "--event", "progress", "--data", '{"a":1,"a":2}'), {},
         "duplicate key 'a'"),
        (("publish", "--raw", "-"), {"input": raw_dup}, "duplicate key 'seq'"),
        (("msg", "send", "t", surrogate), {}, "lone surrogate"),
        (("msg", "send", "t", '"\\ud800"'), {}, "lone surrogate"),
        (("publish", "--job", stored, "--event", "progress", "--data", surrogate), {},
         "lone surrogate"),
    ]  # fmt: skip
    for args, kwargs, text in cases:
        one_line(cli(*args, **kwargs), (1,), text)
    assert dump(state_dir) == before
    paired = cli("msg", "send", "t", '"\\ud83d\\ude00"')  # a real pair is one character
    assert paired.returncode == 0, paired
    assert json.loads(cli("msg", "poll").stdout.splitlines()[-1])["payload"] == "\U0001f600"


@pytest.mark.parametrize("kind", ["", " ", "   ", "\t", " \n "])
def test_a_blank_message_type_is_refused(cli: Cli, state_dir: Path, kind: str) -> None:
    cli("msg", "send", "seed", "{}")
    before = dump(state_dir)
    one_line(cli("msg", "send", kind, "{}"), (1,), "message type must not be empty or blank")
    assert dump(state_dir) == before


def test_a_hook_payload_with_a_duplicate_key_records_nothing(state_dir: Path) -> None:
    """`orchestrate hook` (which must never fail the agent) reads its JSON as every
    reader does: a payload naming its event twice is logged and ignored, exit 0."""
    registry = Registry.open(state_dir)
    job = registry.register("p", "claude", "alpha")
    registry.set_status(job.job_id, "running", "picked")
    payload = '{"hook_event_name": "Stop", "hook_event_name": "UserPromptSubmit"}'
    result = run_cli("hook", "claude", state_dir=state_dir, input=payload,
                     env={"ORCHESTRATE_JOB": job.job_id})  # fmt: skip
    assert (result.returncode, result.stdout) == (0, ""), result
    assert Registry.open(state_dir).get(job.job_id).activity == "starting"
    log = (state_dir / "logs" / job.job_id / "hook-errors.log").read_text()
    assert "hook payload is not valid JSON: duplicate key 'hook_event_name'" in log
