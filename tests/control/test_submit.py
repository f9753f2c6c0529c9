"""`orchestrate submit` end to end: real tmux on a private socket, real SQLite, real agents."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

from app.control import Orchestrator
from registry.jobs import Registry
from tests.control.conftest import demo_cmd_text


def only_job(state_dir: Path) -> str:
    jobs = Registry.open(state_dir).list()
    assert len(jobs) == 1, jobs
    return jobs[0].job_id


def test_demo_agent_completes_and_submit_exits_0(
    cli, state_dir: Path, tmux_socket: str, workdir: Path
) -> None:
    """The seed wrapper's happy path: the agent publishes started..completed, submit exits 0."""
    result = cli(
        "submit", "--prompt", "tidy up", "--agent", "demo", "--agent-session", "alpha",
        "--agent-cmd", demo_cmd_text(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    job = Registry.open(state_dir).get(job_id)
    assert job.status == "completed" and job.last_event == "completed"
    assert f"[{job_id}] started" in result.stderr and "completed" in result.stderr
    job_dir = state_dir / "logs" / job_id
    assert "all steps done" in (job_dir / "pane.log").read_text()
    prompt = job_dir / "prompt.txt"
    assert stat.S_IMODE(prompt.stat().st_mode) == 0o600
    text = prompt.read_text()
    assert f"orchestrate publish --job {job_id} --event" in text and text.endswith("tidy up\n")


def test_failing_agent_is_an_error_and_exit_1(cli, state_dir: Path, tmux_socket: str) -> None:
    result = cli(
        "submit", "--prompt", "break it", "--agent", "demo", "--agent-session", "alpha",
        "--agent-cmd", demo_cmd_text("--fail"),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "simulated failure" in result.stderr.splitlines()[-1]
    assert Registry.open(state_dir).get(result.stdout.strip()).status == "error"


def test_idle_agent_times_out_with_exit_2(cli, state_dir: Path, tmux_socket: str) -> None:
    """An agent that never reports: the idle timeout ends the wait; the job keeps running."""
    result = cli(
        "submit", "--prompt", "think", "--agent", "custom", "--agent-session", "alpha",
        "--agent-cmd", "sleep 30", "--idle-timeout", "1",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "idle timeout" in result.stderr.splitlines()[-1]
    assert Registry.open(state_dir).get(result.stdout.strip()).status == "running"


def test_a_timeout_past_30_days_is_refused_before_anything_starts(
    cli, state_dir: Path, tmux_socket: str
) -> None:
    """`submit --timeout` too large for a lease: one line, exit 1, no job, no pane."""
    result = cli(
        "submit", "--prompt", "think", "--agent", "custom", "--agent-session", "alpha",
        "--agent-cmd", "sleep 30", "--timeout", str(2**63 - 1),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stderr == "orchestrate: --timeout must be at most 2592000 seconds (30 days)\n"
    assert Registry.open(state_dir).list() == []


def test_shell_metacharacters_in_the_prompt_run_nothing(
    cli, state_dir: Path, tmux_socket: str, workdir: Path
) -> None:
    """The prompt reaches the agent through a file: nothing in it is ever run by a shell."""
    prompt = "$(touch pwned) `touch pwned2` \"'; touch pwned3; rm -rf x; echo '\" $HOME"
    (workdir / "x").mkdir()
    result = cli(
        "submit", "--prompt", prompt, "--agent", "demo", "--agent-session", "alpha",
        "--agent-cmd", demo_cmd_text(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert sorted(p.name for p in workdir.iterdir()) == ["x"]
    assert not list(state_dir.rglob("pwned*"))
    assert (state_dir / "logs" / job_id / "prompt.txt").read_text().endswith(prompt + "\n")


def test_agent_command_not_found_fails_the_job_with_the_reason(
    cli, state_dir: Path, tmux_socket: str
) -> None:
    """The pane exits 127; the wait notices the dead pane instead of hanging."""
    result = cli(
        "submit", "--prompt", "x", "--agent", "custom", "--agent-session", "alpha",
        "--agent-cmd", "no-such-agent-binary-zz",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[-1].endswith("agent pane exited with status 127")
    registry = Registry.open(state_dir)
    job_id = result.stdout.strip()
    assert registry.get(job_id).status == "error"
    assert "agent pane exited with status 127" in registry.why(job_id)


def test_no_wait_prints_the_job_id_and_the_pane_gets_its_env(
    orch: Orchestrator, cli, state_dir: Path, wait_for
) -> None:
    """Every pane knows its job and the absolute state dir, whatever its cwd."""
    script = "echo JOB=$ORCHESTRATE_JOB HOME=$ORCHESTRATE_HOME; sleep 30"
    result = cli(
        "submit", "--prompt", "x", "--agent", "custom", "--agent-session", "alpha",
        "--agent-cmd", f"sh -c '{script}'", "--no-wait",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert Registry.open(state_dir).get(job_id).status == "running"
    pane = orch.pane_for_job(job_id)
    assert pane is not None
    expected = f"JOB={job_id} HOME={state_dir.resolve()}"
    wait_for(lambda: any(expected in line for line in orch.driver.capture(pane)), what=expected)


def test_unknown_agent_without_a_command_is_refused_and_stores_nothing(
    cli, state_dir: Path, tmux_socket: str
) -> None:
    result = cli("submit", "--prompt", "x", "--agent", "gpt-9", "--agent-session", "alpha")
    assert result.returncode == 1
    assert (
        result.stderr.count("\n") == 1 and "no default command for agent 'gpt-9'" in result.stderr
    )
    assert Registry.open(state_dir).list() == []


def test_missing_tmux_is_one_line_and_stores_nothing(
    cli, state_dir: Path, tmux_socket: str, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    result = cli(
        "submit", "--prompt", "x", "--agent", "demo", "--agent-session", "alpha",
        env={"PATH": str(empty)},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == "orchestrate: tmux is not installed (no `tmux` on PATH)"
    assert Registry.open(state_dir).list() == []


def test_bad_input_is_one_line(cli, tmux_socket: str) -> None:
    both = cli("submit", "--prompt", "x", "--prompt-file", os.devnull, "--agent", "demo",
               "--agent-session", "a")  # fmt: skip
    assert both.returncode == 1 and both.stderr.startswith("orchestrate: give --prompt")
    quote = cli("submit", "--prompt", "x", "--agent", "demo", "--agent-session", "a",
                "--agent-cmd", "sh -c 'unclosed")  # fmt: skip
    assert quote.returncode == 1 and "cannot be split" in quote.stderr


def test_a_job_ended_by_hand_ends_the_wait_like_subscribe(
    cli, state_dir: Path, tmux_socket: str
) -> None:
    """No event comes for a job set completed (or cancelled) by hand: submit reads the
    registry, as subscribe does, instead of waiting out its timeout (exit 2)."""
    ended: list[str] = []

    def end_it_by_hand() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            jobs = Registry.open(state_dir).list(status="running")
            if jobs:
                Registry.open(state_dir).set_status(jobs[0].job_id, "completed")
                ended.append(jobs[0].job_id)
                return
            time.sleep(0.1)

    helper = threading.Thread(target=end_it_by_hand)
    helper.start()
    started = time.monotonic()
    result = cli(
        "submit", "--prompt", "think", "--agent", "custom", "--agent-session", "alpha",
        "--agent-cmd", "sleep 60", "--timeout", "40",
    )  # fmt: skip
    helper.join()
    assert result.returncode == 0, result.stderr
    assert ended == [result.stdout.strip()] and time.monotonic() - started < 20
    assert result.stderr.splitlines()[-1] == f"job {ended[0]} completed"
