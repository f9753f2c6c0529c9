"""The demo agent run directly (no tmux), and the label <-> session-name mapping."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.tmux.errors import InvalidLabel
from app.tmux.names import SAFE_LABEL, default_socket_name, label_for, session_name_for


def run_demo(
    tmp_path: Path, publish_cmd: str, *flags: str, answers: str = "", job: str = "abcd1234"
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("$(touch pwned) refactor the parser\n")
    argv = [sys.executable, "-m", "app.agents.demo_cli", str(prompt), "--delay", "0"]
    argv += ["--job", job, "--publish-cmd", publish_cmd, *flags]
    proc = subprocess.run(
        argv, input=answers, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    log = Path(shlex.split(publish_cmd)[-1])
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, rows


def events(rows: list[list[str]]) -> list[str]:
    return [row[row.index("--event") + 1] for row in rows]


def test_demo_agent_publishes_started_progress_completed(
    tmp_path: Path, publish_log: tuple[str, Path]
) -> None:
    proc, rows = run_demo(tmp_path, publish_log[0], "--steps", "3")
    assert proc.returncode == 0, proc.stderr
    assert events(rows) == ["started", "progress", "progress", "progress", "completed"]
    progress = json.loads(rows[1][rows[1].index("--data") + 1])
    assert progress["step"] == 1 and progress["of"] == 3
    assert all(row[row.index("--job") + 1] == "abcd1234" for row in rows)
    assert "refactor the parser" in proc.stdout
    assert not (tmp_path / "pwned").exists()


def test_demo_agent_is_deterministic_with_a_seed(
    tmp_path: Path, publish_log: tuple[str, Path]
) -> None:
    first, _ = run_demo(tmp_path, publish_log[0], "--seed", "7")
    second, _ = run_demo(tmp_path, publish_log[0], "--seed", "7")
    assert first.stdout == second.stdout


def test_demo_agent_fail_flag_publishes_error_and_exits_1(
    tmp_path: Path, publish_log: tuple[str, Path]
) -> None:
    proc, rows = run_demo(tmp_path, publish_log[0], "--steps", "1", "--fail")
    assert proc.returncode == 1
    assert events(rows)[-1] == "error"


def test_demo_agent_permission_answers(tmp_path: Path, publish_log: tuple[str, Path]) -> None:
    """An unclear answer is asked again; "n" ends in an error event and exit status 1."""
    proc, rows = run_demo(
        tmp_path, publish_log[0], "--steps", "2", "--ask-permission", answers="maybe\nn\n"
    )
    assert proc.returncode == 1
    assert "please answer y or n" in proc.stdout
    assert events(rows) == ["started", "progress", "permission_required", "error"]


def test_demo_agent_bad_flags_and_publish_failure(tmp_path: Path) -> None:
    bad = subprocess.run(
        [sys.executable, "-m", "app.agents.demo_cli", "--steps", "0"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--steps" in bad.stderr
    proc, _ = run_demo(tmp_path, "false /nonexistent/log", "--steps", "1")
    assert proc.returncode == 0  # a failed publish is reported, the agent carries on
    assert "publish started failed" in proc.stderr


def test_demo_and_watch_demo_allow_the_same_number_of_agents(cli) -> None:  # type: ignore[no-untyped-def]
    """`demo --agents` took 1-20 and `watch --demo --agents` 1-16: one limit for both."""
    from app.commands.demo import demo
    from app.commands.watch import watch
    from app.control import MAX_DEMO_AGENTS

    def agents_range(command: click.Command) -> tuple[object, object]:
        option = next(param for param in command.params if param.name == "agents")
        assert isinstance(option.type, click.IntRange)
        return option.type.min, option.type.max

    assert agents_range(demo) == agents_range(watch) == (1, MAX_DEMO_AGENTS)
    for args in (("demo", "--agents"), ("watch", "--demo", "--agents")):
        result = cli(*args, str(MAX_DEMO_AGENTS + 1))  # refused while parsing: no tmux, no TUI
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert f"1<=x<={MAX_DEMO_AGENTS}" in result.stderr


@given(st.from_regex(SAFE_LABEL, fullmatch=True))
def test_label_mapping_round_trips_and_is_tmux_safe(label: str) -> None:
    name = session_name_for(label)
    assert "." not in name and ":" not in name and "#" not in name
    assert label_for(name) == label


@given(st.text())
def test_a_label_outside_the_safe_pattern_is_refused(label: str) -> None:
    """Whatever the text, either it is a SAFE_LABEL word or InvalidLabel is raised."""
    if SAFE_LABEL.fullmatch(label):
        assert label_for(session_name_for(label)) == label
    else:
        with pytest.raises(InvalidLabel):
            session_name_for(label)


def test_bad_labels_and_socket_default() -> None:
    for label in ("", "   ", "a\nb"):
        with pytest.raises(InvalidLabel):
            session_name_for(label)
    assert default_socket_name({}) == "orchestrate"
    assert default_socket_name({"ORCHESTRATE_TMUX_SOCKET": "mine"}) == "mine"
