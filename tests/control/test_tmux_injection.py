"""`#(...)` in a label, a `--workdir` or the state dir, as a new user would type them:
the real CLI, real tmux on a private socket; nothing runs (no file appears)."""

from __future__ import annotations

from pathlib import Path

from registry.jobs import Registry
from tests.conftest import run_cli
from tests.control.conftest import demo_cmd_text


def hostile(base: Path, name: str) -> Path:
    """A directory path holding `#(touch <base>/pwned-<name>)` (nested: the marker has
    slashes), so the file `<base>/pwned-<name>` appears if tmux expands the path."""
    directory = base / f"{name}#(touch {base}/pwned-{name})"
    directory.mkdir(parents=True)
    return directory


def test_submit_with_a_hostile_state_dir_and_workdir_runs_nothing(
    tmp_path: Path, tmux_socket: str
) -> None:
    """The agent runs in the hostile workdir, reports to the hostile state dir, completes."""
    state = hostile(tmp_path, "state")
    workdir = hostile(tmp_path, "workdir")
    result = run_cli(
        "--state-dir", str(state), "submit", "--prompt", "tidy up", "--agent", "demo",
        "--agent-session", "alpha", "--workdir", str(workdir), "--agent-cmd", demo_cmd_text(),
    )  # fmt: skip
    assert [m for m in ("pwned-state", "pwned-workdir") if (tmp_path / m).exists()] == []
    assert result.returncode == 0, result.stderr
    job = Registry.open(state).get(result.stdout.strip())
    assert job.status == "completed"
    assert "all steps done" in (state / "logs" / job.job_id / "pane.log").read_text()


def test_a_hostile_label_is_refused_in_one_line_and_nothing_is_stored(
    tmp_path: Path, state_dir: Path, tmux_socket: str
) -> None:
    """A one-word label that the registry takes, but that tmux would expand: refused
    before anything is stored or started."""
    marker = tmp_path / "pwned-label"
    script = tmp_path / "pwn.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    script.chmod(0o700)
    for command in (
        ("session", "create", f"ok#({script})"),
        ("submit", "--prompt", "x", "--agent", "demo", "--agent-session", f"x#({script})",
         "--agent-cmd", demo_cmd_text(), "--no-wait"),
    ):  # fmt: skip
        refused = run_cli(*command, state_dir=state_dir)
        assert not marker.exists()
        assert refused.returncode == 1, refused
        assert refused.stderr.count("\n") == 1
        assert "cannot name a tmux session" in refused.stderr
    assert Registry.open(state_dir).list() == []
