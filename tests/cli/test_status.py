"""`orchestrate status`: who waits on you, for a person, for JSON and for tmux's
status line; real processes over a real state dir."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from registry.activity import Observation
from registry.jobs import Registry
from tests.conftest import Result

HOSTILE = "rm -rf / \x1b]0;pwned\x07 #(reboot)"


def status(state_dir: Path, *args: str, via_click: bool = False) -> Result:
    """`orchestrate --state-dir DIR status ARGS` as a process; `via_click` skips the
    entry point's fast path for `--tmux`, to compare the two."""
    code = "from app.cli import main; main()" if via_click else "from app.entry import main; main()"
    argv = [sys.executable, "-c", code, "--state-dir", str(state_dir), "status", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


def waiting_jobs(state_dir: Path, count: int, command: str = "npm test") -> list[str]:
    registry = Registry.open(state_dir)
    job_ids = []
    for n in range(count + 1):  # one more, working: it is not counted
        job = registry.register(f"task {n}", "claude", f"s{n}", sign_events=False)
        registry.publish(job.job_id, "started", "go")
        if n < count:
            asks = Observation("waiting", "hook:claude:PermissionRequest", "", "Bash", command)
            registry.observe(job.job_id, asks)
            job_ids.append(job.job_id)
    registry.db.close()
    return job_ids


@pytest.mark.parametrize("via_click", [False, True])
def test_tmux_segment_counts_the_waiting_jobs(state_dir: Path, via_click: bool) -> None:
    waiting_jobs(state_dir, 2)
    result = status(state_dir, "--tmux", via_click=via_click)
    assert (result.returncode, result.stdout, result.stderr) == (0, "⚠ 2\n", "")
    calm = status(state_dir, "--tmux", "--calm", "ok", via_click=via_click)
    assert calm.stdout == "⚠ 2\n"


@pytest.mark.parametrize("via_click", [False, True])
def test_nobody_waiting_prints_nothing_or_the_calm_mark(
    tmp_path: Path, state_dir: Path, via_click: bool
) -> None:
    """With no state dir at all, none is created; the calm mark is tmux-escaped
    (tmux expands a #() job's output as a format again)."""
    missing = tmp_path / "never-made"
    assert status(missing, "--tmux", via_click=via_click).stdout == "\n"
    assert not missing.exists()
    waiting_jobs(state_dir, 0)
    result = status(state_dir, "--tmux", "--calm", "✓ #(reboot)", via_click=via_click)
    assert (result.returncode, result.stdout) == (0, "✓ ##(reboot)\n")


def test_human_and_json_list_what_each_job_asks(state_dir: Path) -> None:
    job_ids = waiting_jobs(state_dir, 2, command=HOSTILE)
    human = status(state_dir)
    assert human.returncode == 0
    assert human.stdout.splitlines()[0] == "2 jobs waiting on you:"
    assert all(job_id in human.stdout for job_id in job_ids)
    assert "\x1b" not in human.stdout and "\x07" not in human.stdout  # shown, never obeyed
    data = json.loads(status(state_dir, "--json").stdout)
    assert data["waiting"] == 2 and [job["job_id"] for job in data["jobs"]] == job_ids
    assert {job["event"] for job in data["jobs"]} == {"needs_you"}
    assert data["jobs"][0]["question"].startswith("Bash `rm -rf / ")
    Registry.open(state_dir).cancel(job_ids[0])
    assert status(state_dir, "--tmux").stdout == "⚠ 1\n"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--tmux", "--json"), "pick one"),
        (("--calm", "ok"), "--calm only applies with --tmux"),
        (("--tmux", "--calm", "a\x1bb"), "printable"),
        (("--tmux", "--calm", "x" * 41), "at most 40"),
        (("--tmux", "--bogus"), "No such option"),
    ],
)
def test_bad_options_are_one_line(state_dir: Path, args: tuple[str, ...], says: str) -> None:
    result = status(state_dir, *args)
    assert result.returncode == 2 and result.stdout == ""
    assert says in result.stderr and result.stderr.count("\n") == 1


def test_a_broken_database_is_one_line_and_left_alone(tmp_path: Path) -> None:
    """A file that is not a database, and a database of something else: exit 1, one
    line, nothing printed for tmux, the file untouched (status only ever reads)."""
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "state.db").write_bytes(b"not a database at all" * 100)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with sqlite3.connect(foreign / "state.db") as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    for state in (garbage, foreign):
        before = (state / "state.db").read_bytes()
        for args in (("--tmux",), ()):
            result = status(state, *args)
            assert result.returncode == 1 and result.stdout == ""
            assert result.stderr.startswith("orchestrate: ") and result.stderr.count("\n") == 1
        assert (state / "state.db").read_bytes() == before
