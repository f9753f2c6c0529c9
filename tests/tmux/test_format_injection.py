"""Hostile text never reaches a tmux format: `#(...)` in a label, a workdir, a state dir or
a log path runs nothing (real tmux, private socket; each test checks no file appeared)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.tmux.driver import TmuxDriver
from app.tmux.errors import InvalidLabel
from app.tmux.format_safe import argument_literal, format_literal
from app.tmux.names import SAFE_LABEL, is_safe_label, session_name_for

WaitFor = Callable[..., object]


def hostile(base: Path, name: str) -> Path:
    """A directory whose path holds `#(touch <base>/pwned-<name>)`; tmux would run it
    if the path reached a format unescaped. The marker's slashes make it nested."""
    directory = base / f"{name}#(touch {base}/pwned-{name})"
    directory.mkdir(parents=True)
    return directory


def pwned(base: Path) -> list[str]:
    return sorted(path.name for path in base.glob("pwned-*"))


@pytest.mark.parametrize(
    "label",
    [
        "#(touch BASE/pwned-label)",
        "ok#(touch BASE/pwned-label)",
        "x#{session_name}",
        "#[fg=red]red",
        "-t",
        "a b",
        "a;",
        "éte",
        "a\u202eb",
    ],
)
def test_a_hostile_label_is_refused_before_tmux(
    driver: TmuxDriver, tmp_path: Path, label: str
) -> None:
    """Only SAFE_LABEL labels name a tmux session; anything else is refused, nothing runs,
    and lookups simply find no session for it."""
    label = label.replace("BASE", str(tmp_path))
    with pytest.raises(InvalidLabel, match="cannot name a tmux session"):
        driver.ensure_session(label)
    with pytest.raises(InvalidLabel):
        driver.check_owner(label)
    assert not driver.has_session(label)
    assert driver.kill_session(label) is False
    assert pwned(tmp_path) == []
    assert driver.list_sessions() == []


def test_legitimate_labels_still_work(driver: TmuxDriver) -> None:
    for label in ("tmux:claude", "team.alpha:1", "demo-3", "a.b%c:d", "user@host", "w/x+y=z"):
        assert is_safe_label(label), label
        driver.ensure_session(label)
    labels = {info.label for info in driver.list_sessions()}
    assert labels == {"tmux:claude", "team.alpha:1", "demo-3", "a.b%c:d", "user@host", "w/x+y=z"}
    assert SAFE_LABEL.pattern.startswith("[A-Za-z0-9_]")  # never an option or a tmux target
    # an agent's OSC 52 must not reach the clipboard of whoever attaches
    assert driver.server.cmd("show-options", "-sv", "set-clipboard").stdout == ["off"]


def test_a_tmux_conf_cannot_let_pane_output_through_to_the_terminal(
    driver: TmuxDriver, tmp_path: Path
) -> None:
    """A server started with the user's tmux.conf allowing passthrough (DCS tmux; ...
    reaches the attached terminal as it stands) and the clipboard: both off once
    orchestrate puts a session on it."""
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g allow-passthrough on\nset -s set-clipboard on\n")
    subprocess.run(
        ["tmux", "-L", driver.socket_name, "-f", str(conf), "new-session", "-d", "-s", "mine"],
        check=True,
    )
    assert driver.server.cmd("show-options", "-gwv", "allow-passthrough").stdout == ["on"]
    driver.ensure_session("agent")
    assert driver.server.cmd("show-options", "-gwv", "allow-passthrough").stdout == ["off"]
    assert driver.server.cmd("show-options", "-sv", "set-clipboard").stdout == ["off"]


def test_hostile_paths_reach_tmux_literally(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """A workdir, a state dir (ORCHESTRATE_HOME, where the pane log and launch script
    live) and the log path holding `#(...)` are passed literally: the agent runs in that
    very directory, its output lands in that very log, and nothing else runs."""
    workdir = hostile(tmp_path, "workdir") / "style#[fg=red]##[b]#"  # styles pass as written
    workdir.mkdir()
    state = hostile(tmp_path, "state")
    log = hostile(state / "logs", "log") / "pane.log"
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("the prompt\n", encoding="utf-8")
    driver.ensure_session("alpha", start_directory=hostile(tmp_path, "session"))
    script = 'printf "CWD=%s\\n" "$(pwd)"; cat "$0"'
    pane_id = driver.start_agent_pane(
        "alpha",
        "0badc0de",
        ["sh", "-c", script, "{prompt_file}"],
        {"ORCHESTRATE_HOME": str(state)},
        prompt,
        log,
        start_directory=workdir,
    )
    wait_for(lambda: driver.pane_status(pane_id).dead, what="the agent to exit")
    assert pwned(tmp_path) == []
    assert not list(Path.cwd().glob("pwned*"))
    assert driver.pane_status(pane_id).dead_status == 0
    text = str(wait_for(lambda: "the prompt" in log.read_text() and log.read_text()))
    assert f"CWD={workdir}" in text


def test_hostile_log_path_in_the_control_room_split(driver: TmuxDriver, tmp_path: Path) -> None:
    """The control-room split tails a log whose path holds `#(...)`: nothing runs."""
    log = hostile(tmp_path, "split") / "pane.log"
    log.write_text("hello\n", encoding="utf-8")
    room = driver.control_room_split("0badc0de", log, [sys.executable, "-c", "print(1)"])
    assert room.created
    assert pwned(tmp_path) == []
    with pytest.raises(Exception, match="job id"):
        driver.control_room_split("x#(touch pwned)", log, [])


def test_a_trailing_semicolon_is_typed_not_taken_as_a_tmux_separator(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """tmux ends a command at an argument ending in ';': typed text and an environment
    value ending in ';' are kept as they are (the window would not even open)."""
    record = tmp_path / "typed.json"
    reader = f"import json; open({str(record)!r}, 'w').write(json.dumps(input()))"
    prompt = tmp_path / "p"
    prompt.write_text("", encoding="utf-8")
    pane_id = driver.start_agent_pane(
        "alpha",
        "5e4c0de1",
        [sys.executable, "-c", reader, "{prompt_file}"],
        {"ORCHESTRATE_HOME": str(tmp_path / "state"), "HOSTILE": "x#(touch pwned-env);"},
        prompt,
        tmp_path / "state" / "pane.log",
    )
    driver.send_keys(pane_id, "echo a\\; b;", enter=True)
    wait_for(lambda: record.exists() and record.read_text(), what="the typed line")
    assert json.loads(record.read_text()) == "echo a\\; b;"


def test_escapes_are_the_documented_ones() -> None:
    assert format_literal("a#b##") == "a##b####"
    assert format_literal("d#[x ##[y #") == "d#[x ##[y ##"  # tmux copies #...[ through
    assert format_literal("x;") == "x\\;"
    assert argument_literal("#x") == "#x"
    assert argument_literal("a\\;") == "a\\\\;"
    assert session_name_for("team.alpha:1") == "team%2Ealpha%3A1"
