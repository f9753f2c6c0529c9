"""`orchestrate doctor --self-test`'s refusals: a name it cannot test, an agent that is not
installed, nothing installed, names without --self-test. Each is one line and a
non-zero exit, before anything starts (the real runs: tests/agents/test_self_test.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("name", ["nosuch", "demo", "--", "claude\u202e"])
def test_an_unknown_agent_is_refused_in_one_line(cli, name: str) -> None:  # type: ignore[no-untyped-def]
    args = (
        ("doctor", "--self-test", "--", "nosuch")
        if name == "--"
        else ("doctor", "--self-test", name)
    )
    result = cli(*args)
    assert result.returncode == 2, result
    line = one_line(result.stderr)
    assert "unknown agent" in line and "one of claude, codex, gemini, aider" in line
    assert "\u202e" not in line  # the name is shown, not acted on by the terminal
    assert result.stdout == ""


def test_an_agent_that_is_not_installed_is_refused_with_how_to_install(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "bin"
    empty.mkdir()
    result = cli("doctor", "--self-test", "claude", "codex", env={"PATH": str(empty)})
    assert result.returncode == 1, result
    line = one_line(result.stderr)
    assert "claude is not installed (no `claude` on PATH)" in line
    assert "npm install -g @anthropic-ai/claude-code" in line
    assert "self-testing" not in result.stdout  # refused before anything started


def test_with_no_agent_named_and_none_installed_it_says_so(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "bin"
    empty.mkdir()
    result = cli("doctor", "--self-test", env={"PATH": str(empty)})
    assert result.returncode == 1, result
    assert "no agent CLI to self-test is installed" in one_line(result.stderr)


def test_agent_names_without_self_test_are_refused(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("doctor", "claude")
    assert result.returncode == 2, result
    assert "AGENT names are for --self-test" in one_line(result.stderr)


def test_an_alias_names_its_kind(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`claude-code` is Claude's alias: refused only because it is not installed here."""
    empty = tmp_path / "bin"
    empty.mkdir()
    result = cli("doctor", "--self-test", "claude-code", env={"PATH": str(empty)})
    assert result.returncode == 1, result
    assert "claude is not installed" in one_line(result.stderr)


def test_an_agent_that_dies_at_start_is_named_and_its_text_stays_harmless(
    cli, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A `claude` on PATH that exits at once (its version line carries a terminal escape):
    the self-test runs it for real, says the job ended, names what broke, and prints
    none of its control characters."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text("#!/bin/sh\nprintf '2.1.197 (Claude Code)\\033]0;pwned\\007\\n'\nexit 3\n")
    fake.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    result = cli("doctor", "--self-test", "claude", env={"PATH": path, "COLUMNS": "200"})
    assert result.returncode == 1, result
    assert one_line(result.stderr).endswith("self-test broke: claude (activity, hook)")
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    activity = next(line for line in result.stdout.splitlines() if "│ activity" in line)
    assert "BROKEN" in activity and "the job ended error" in activity
