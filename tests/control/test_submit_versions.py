"""`orchestrate submit` warns once, on one line, when the agent's installed version is
outside the versions its adapter is tested on; the job runs all the same."""

from __future__ import annotations

from pathlib import Path

import pytest

STAND_IN = """#!/bin/sh
if [ "$1" = --version ]; then echo asked >> "{asked}"; echo '{version} (Claude Code)'; exit 0; fi
sleep 5
"""


def stand_in(directory: Path, name: str, version: str) -> Path:
    """An executable that prints ``version`` for --version (and notes that it was asked)."""
    directory.mkdir(exist_ok=True)
    program = directory / name
    program.write_text(STAND_IN.format(asked=directory / "asked", version=version))
    program.chmod(0o755)
    return program


@pytest.mark.parametrize(("version", "warned"), [("9.9.9", True), ("2.1.197", False)])
def test_submit_warns_once_outside_the_tested_versions(
    cli, tmux_socket: str, workdir: Path, tmp_path: Path, version: str, warned: bool
) -> None:
    claude = stand_in(tmp_path / "bin", "claude", version)

    result = cli(
        "submit", "--prompt", "hello", "--agent", "claude", "--agent-session", "alpha",
        "--agent-cmd", str(claude), "--no-wait",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    if warned:
        assert len(warnings) == 1, result.stderr
        assert warnings[0].startswith("orchestrate: warning: claude 9.9.9 is not a version")
        assert "(2.1.197" in warnings[0]
    else:
        assert warnings == []


def test_submit_never_asks_another_program_its_version(
    cli, tmux_socket: str, workdir: Path, tmp_path: Path
) -> None:
    """A user's own command for the kind may not know --version: it is not run for it."""
    wrapper = stand_in(tmp_path / "bin", "my-claude-wrapper", "9.9.9")

    result = cli(
        "submit", "--prompt", "hello", "--agent", "claude", "--agent-session", "alpha",
        "--agent-cmd", str(wrapper), "--no-wait",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    assert not (tmp_path / "bin" / "asked").exists()
