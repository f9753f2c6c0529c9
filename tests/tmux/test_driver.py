"""The tmux driver against a real tmux server on a private socket."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.tmux.driver import PaneStatus, TmuxDriver
from app.tmux.errors import (
    AnswerNotReceived,
    InvalidStopMode,
    PaneDead,
    PaneNotFound,
    TmuxCommandFailed,
    TmuxNotInstalled,
    TmuxServerUnreachable,
)

WaitFor = Callable[..., object]


def start(
    driver: TmuxDriver,
    tmp_path: Path,
    argv: list[str],
    *,
    job_id: str = "0badc0de",
    label: str = "team.alpha:1",
    prompt: str = "do the thing\n",
    header: str = "report with orchestrate publish",
) -> tuple[str, Path]:
    """Start an agent pane; returns (pane_id, pane.log path)."""
    prompt_file = tmp_path / f"{job_id}.prompt"
    prompt_file.write_text(prompt, encoding="utf-8")
    log = tmp_path / "state" / "logs" / job_id / "pane.log"
    pane_id = driver.start_agent_pane(
        label,
        job_id,
        argv,
        {"ORCHESTRATE_HOME": str(tmp_path / "state")},
        prompt_file,
        log,
        header,
        start_directory=tmp_path,
    )
    return pane_id, log


def wait_dead(driver: TmuxDriver, pane_id: str, wait_for: WaitFor) -> PaneStatus:
    wait_for(lambda: driver.pane_status(pane_id).dead, what=f"pane {pane_id} to exit")
    return driver.pane_status(pane_id)


def published_events(log: Path) -> list[str]:
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [row[row.index("--event") + 1] for row in rows]


def test_session_is_created_once_and_reused(driver: TmuxDriver) -> None:
    """ensure_session reuses the session of a label; tmux-illegal characters round-trip."""
    assert driver.server_running() is False
    first = driver.ensure_session("team.alpha:1")
    assert driver.ensure_session("team.alpha:1") == first
    other = driver.ensure_session("beta")
    assert other != first
    labels = sorted(info.label for info in driver.list_sessions())
    assert labels == ["beta", "team.alpha:1"]
    assert driver.kill_session("beta") is True
    assert driver.kill_session("beta") is False
    assert not driver.has_session("beta")


def test_agent_pane_gets_env_header_and_logs_output(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """The pane sees absolute ORCHESTRATE_HOME and ORCHESTRATE_JOB; pane.log outlives the pane."""
    script = (
        'echo "HOME=$ORCHESTRATE_HOME"; echo "JOB=$ORCHESTRATE_JOB"; echo "CWD=$(pwd)"; cat "$0"'
    )
    argv = ["sh", "-c", script, "{prompt_file}"]
    pane_id, log = start(driver, tmp_path, argv, prompt="the prompt\n")
    status = wait_dead(driver, pane_id, wait_for)
    assert status.dead_status == 0
    assert status.job_id == "0badc0de"
    assert driver.pane_for_job("0badc0de") == pane_id
    text = str(wait_for(lambda: "the prompt" in log.read_text() and log.read_text()))
    assert f"HOME={(tmp_path / 'state').resolve()}" in text
    assert "JOB=0badc0de" in text
    assert "report with orchestrate publish" in text.splitlines()[0]
    driver.kill_session("team.alpha:1")
    assert "JOB=0badc0de" in log.read_text()


def test_shell_metacharacters_in_prompt_run_nothing(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """A hostile prompt reaches the agent verbatim and no shell ever expands it."""
    prompt = (
        "$(touch pwned1) `touch pwned2` \"; touch pwned3; \" '; touch pwned4; ' "
        "; rm -rf victim && touch pwned5 | touch pwned6\n$HOME ${PATH}\n"
    )
    (tmp_path / "victim").mkdir()
    argv = ["printf", "%s\\n", "{prompt}"]  # the prompt as one argv word
    pane_id, log = start(driver, tmp_path, argv, prompt=prompt, header="$(touch pwned7)")
    assert wait_dead(driver, pane_id, wait_for).dead_status == 0
    wait_for(lambda: "${PATH}" in log.read_text(), what="prompt echoed to pane.log")
    assert not list(tmp_path.glob("pwned*"))
    assert (tmp_path / "victim").is_dir()
    assert prompt.splitlines()[0] in log.read_text()


def test_prompt_file_placeholder_passes_path_as_argument(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """With "{prompt_file}" in argv the path is an argument and stdin stays the terminal."""
    pane_id, log = start(driver, tmp_path, ["cat", "{prompt_file}"], prompt="$(touch pwned)\n")
    assert wait_dead(driver, pane_id, wait_for).dead_status == 0
    wait_for(lambda: "$(touch pwned)" in log.read_text())
    assert not (tmp_path / "pwned").exists()


def test_bad_job_id_is_refused(driver: TmuxDriver, tmp_path: Path) -> None:
    with pytest.raises(TmuxCommandFailed, match="job id"):
        start(driver, tmp_path, ["cat"], job_id="x\ntouch pwned")
    assert not (tmp_path / "pwned").exists()


def test_agent_command_not_found_leaves_dead_pane_with_status(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """A missing agent binary ends in a dead pane with a non-zero status, not a hang."""
    pane_id, log = start(driver, tmp_path, ["no-such-agent-binary-xyz", "--flag"])
    status = wait_dead(driver, pane_id, wait_for)
    assert status.exists and status.dead_status not in (None, 0)
    assert driver.pane_alive(pane_id) is False
    wait_for(lambda: "no-such-agent-binary-xyz" in log.read_text())
    assert "no-such-agent-binary-xyz" in driver.capture(pane_id, 5)[-1]  # readable after death


def test_demo_agent_waits_for_permission_and_continues_on_yes(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor, publish_log: tuple[str, Path]
) -> None:
    """send_answer("y") reaches the demo agent's y/n prompt and it completes."""
    publish_cmd, events_log = publish_log
    argv = [sys.executable, "-m", "app.agents.demo_cli", "--steps", "2", "--delay", "0.01"]
    argv += ["--ask-permission", "--publish-cmd", publish_cmd]
    pane_id, _log = start(driver, tmp_path, argv)
    wait_for(lambda: "permission_required" in published_events(events_log))
    wait_for(lambda: any("[y/n]" in line for line in driver.capture(pane_id, 10)))
    assert driver.pane_alive(pane_id)
    driver.send_answer(pane_id, "y")
    assert wait_dead(driver, pane_id, wait_for).dead_status == 0
    assert published_events(events_log) == [
        "started",
        "progress",
        "permission_required",
        "progress",
        "progress",
        "completed",
    ]
    rows = [json.loads(line) for line in events_log.read_text().splitlines()]
    assert all(row[row.index("--job") + 1] == "0badc0de" for row in rows)


def test_demo_agent_answer_no_ends_in_error(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor, publish_log: tuple[str, Path]
) -> None:
    publish_cmd, events_log = publish_log
    argv = [sys.executable, "-m", "app.agents.demo_cli", "--steps", "2", "--delay", "0"]
    argv += ["--ask-permission", "--publish-cmd", publish_cmd]
    pane_id, _log = start(driver, tmp_path, argv)
    wait_for(lambda: any("[y/n]" in line for line in driver.capture(pane_id, 10)))
    driver.send_answer(pane_id, "n")
    assert wait_dead(driver, pane_id, wait_for).dead_status == 1
    assert published_events(events_log)[-1] == "error"


def test_send_answer_refuses_gone_dead_and_deaf_panes(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """Keys go only to the named, live pane; a pane that never reacts fails loudly."""
    with pytest.raises(PaneNotFound):
        driver.send_answer("%999", "y")
    with pytest.raises(PaneNotFound):
        driver.send_keys("not-a-pane", "y")
    dead_pane, _ = start(driver, tmp_path, ["true"], job_id="deadpane")
    wait_dead(driver, dead_pane, wait_for)
    with pytest.raises(PaneDead):
        driver.send_answer(dead_pane, "y")
    deaf_argv = ["sh", "-c", "stty -echo < /dev/tty; echo ready; sleep 30"]
    deaf_pane, _ = start(driver, tmp_path, deaf_argv, job_id="deaf")
    wait_for(lambda: "ready" in driver.capture(deaf_pane, 5))
    with pytest.raises(AnswerNotReceived):
        driver.send_answer(deaf_pane, "y", timeout=0.3)
    with pytest.raises(TmuxCommandFailed, match="answer must be"):
        driver.send_answer(deaf_pane, "maybe")


def test_stop_modes_leave_the_right_tmux_state(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """soft touches nothing, graceful ends the agent but keeps the session, hard kills it."""
    pane_id, _ = start(driver, tmp_path, ["sh", "-c", "echo ready; sleep 30"], label="s1")
    wait_for(lambda: "ready" in driver.capture(pane_id, 5))

    soft = driver.stop("s1", "soft")
    assert soft.session_existed and not soft.session_killed
    assert driver.pane_alive(pane_id)

    graceful = driver.stop("s1", "graceful", timeout=5)
    assert graceful.exited_panes == (pane_id,) and graceful.still_running_panes == ()
    assert driver.has_session("s1")
    assert driver.pane_status(pane_id).exists and not driver.pane_alive(pane_id)
    wait_for(lambda: driver.pane_dead_status(pane_id) == 130, what="C-c exit status 130")

    hard = driver.stop("s1", "hard")
    assert hard.session_killed
    assert not driver.has_session("s1")
    assert driver.stop("s1", "hard").session_existed is False
    with pytest.raises(InvalidStopMode):
        driver.stop("s1", "gracefull")


def test_resume_starts_the_resume_command_in_the_session(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    log = tmp_path / "resume.log"
    pane_id = driver.resume(
        "s2", ["sh", "-c", "echo resumed $MARK; sleep 30"], env={"MARK": "ok"}, log_path=log
    )
    assert driver.has_session("s2")
    wait_for(lambda: log.exists() and "resumed ok" in log.read_text())
    assert driver.pane_alive(pane_id)
    with pytest.raises(TmuxCommandFailed):
        driver.resume("s2", [], {}, log)


def test_control_room_split_is_70_30(driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor) -> None:
    """Window w:<job>: tail -F of pane.log on top (70 %), the follow command below (30 %)."""
    log = tmp_path / "logs" / "cafe0001" / "pane.log"
    log.parent.mkdir(parents=True)
    log.write_text("agent line one\n")
    follow = [sys.executable, "-c", "import time; print('following events'); time.sleep(30)"]
    room = driver.control_room_split("cafe0001", log, follow)
    window = driver.server.windows.get(window_id=room.window_id)
    assert window.window_name == "w:cafe0001"
    heights = {str(p.pane_id): int(p.pane_height or 0) for p in window.panes}
    total = heights[room.log_pane_id] + heights[room.follow_pane_id]
    assert 0.6 <= heights[room.log_pane_id] / total <= 0.8
    wait_for(lambda: "agent line one" in "\n".join(driver.capture(room.log_pane_id, 5)))
    with log.open("a") as handle:
        handle.write("agent line two\n")
    wait_for(lambda: "agent line two" in "\n".join(driver.capture(room.log_pane_id, 5)))
    wait_for(lambda: "following events" in "\n".join(driver.capture(room.follow_pane_id, 5)))
    again = driver.control_room_split("cafe0001", log, follow)
    assert (again.window_id, again.created) == (room.window_id, False)


def test_missing_tmux_is_a_typed_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TmuxNotInstalled) as info:
        TmuxDriver("orch_test_nothing")
    assert info.value.exit_code == 1


def test_attach_hint_quotes_the_session(driver: TmuxDriver) -> None:
    hint = driver.attach_hint("a.b:c")
    assert shlex.split(hint)[-1] == "=a%2Eb%3Ac"


def test_unusable_server_socket_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A socket directory tmux refuses (unsafe permissions) is reported, not ignored."""
    socket_dir = tmp_path / f"tmux-{os.getuid()}"
    socket_dir.mkdir()
    socket_dir.chmod(0o777)
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    driver = TmuxDriver("orch_test_unsafe")
    with pytest.raises(TmuxServerUnreachable, match="unsafe permissions"):
        driver.list_sessions()
    with pytest.raises(TmuxServerUnreachable):
        driver.ensure_session("a")


def test_graceful_stop_reports_an_agent_that_ignores_its_exit_keys(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    stubborn = ["sh", "-c", "trap '' INT; echo ready; sleep 30"]
    pane_id, _ = start(driver, tmp_path, stubborn, label="s3")
    wait_for(lambda: "ready" in driver.capture(pane_id, 5))
    result = driver.stop("s3", "graceful", timeout=0.3)
    assert result.still_running_panes == (pane_id,) and result.exited_panes == ()
    assert driver.pane_alive(pane_id)
    with pytest.raises(PaneNotFound):
        driver.kill_pane("%9999")
