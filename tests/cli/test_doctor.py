"""`orchestrate doctor`: installed agent CLIs, their versions, and a real hook round trip."""

from __future__ import annotations

import json
import os
from pathlib import Path


def test_doctor_names_versions_and_proves_the_hooks(cli, tmp_path: Path) -> None:
    """A `claude` on PATH is reported with its version; the hook probe really records."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text("#!/bin/sh\necho '2.1.197 (Claude Code)'\n")
    fake.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    result = cli("doctor", "--json", env={"PATH": path})
    assert result.returncode == 0, result.stderr
    rows = {row["agent"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {
        "claude",
        "codex",
        "gemini",
        "aider",
        "acp",
        "gemini-acp",
        "qwen",
        "qwen-acp",
    }
    assert rows["acp"]["version"] == "any ACP agent"
    assert rows["gemini-acp"]["approvals"] == "always by decision: session/request_permission"
    assert rows["claude"]["version"] == "2.1.197 (Claude Code)"
    assert rows["claude"]["path"] == str(fake)
    assert rows["claude"]["hooks"].startswith("ok (")
    assert rows["gemini"]["hooks"].startswith("ok (")
    assert rows["codex"]["hooks"].startswith("ok (")  # its notify program
    assert rows["qwen"]["hooks"].startswith("ok (")
    assert rows["qwen"]["approvals"] == "control-room: permission hook"
    assert rows["claude"]["approvals"] == "control-room: permission hook"
    assert rows["codex"]["approvals"] == "keys only (not installed)"
    human = cli("doctor", env={"PATH": path})
    assert "claude   2.1.197 (Claude Code) (tested 2.1.197 to 2.1.332)" in human.stdout


def test_doctor_says_whether_codex_can_take_structured_approvals(cli, tmp_path: Path) -> None:
    """A Codex whose app-server listens on a unix socket can; an older one cannot."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "codex"
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    for listen, said in [
        ("unix://PATH, ws://IP:PORT", "control-room: app-server (unix socket)"),
        ("ws://IP:PORT", "keys only (its app-server has no unix socket)"),
    ]:
        fake.write_text(
            '#!/bin/sh\n[ "$1" = app-server ] && echo "--listen <URL> '
            + listen
            + '" && exit 0\necho codex-cli 0.169.0\n'
        )
        fake.chmod(0o755)
        result = cli("doctor", "--json", env={"PATH": path})
        rows = {row["agent"]: row for row in map(json.loads, result.stdout.splitlines())}
        assert rows["codex"]["approvals"] == said


def test_doctor_warns_once_for_a_version_outside_the_tested_ones(cli, tmp_path: Path) -> None:
    """One line on stderr per agent outside its adapter's range; not an error."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, line in [("claude", "9.9.9 (Claude Code)"), ("gemini", "0.61.0")]:
        (bin_dir / name).write_text(f"#!/bin/sh\necho '{line}'\n")
        (bin_dir / name).chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    for args in [("doctor",), ("doctor", "--json")]:
        result = cli(*args, env={"PATH": path})
        assert result.returncode == 0, result.stderr
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1, result.stderr
        assert warnings[0].startswith("orchestrate: warning: claude 9.9.9 is not a version")
    rows = {row["agent"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert rows["claude"]["tested"] == "2.1.197 to 2.1.332"
    assert rows["claude"]["warning"] == warnings[0]
    assert rows["gemini"]["warning"] is None
