"""Each adapter declares the agent versions it is tested on; outside them, one warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents import built_in, versions
from app.agents.versions import (
    cached_version_line,
    launch_warning,
    parse_version,
    untested_warning,
)
from tests.agents.clis import AGENT_BIN, PINNED, require
from tests.ci import missing_part

CLAUDE_NEWEST = AGENT_BIN / "claude-2.1.332"


@pytest.mark.parametrize(
    ("line", "version"),
    [
        ("2.1.197 (Claude Code)", "2.1.197"),
        ("codex-cli 0.169.0", "0.169.0"),
        ("0.61.0", "0.61.0"),
        ("aider 0.86.2", "0.86.2"),
        ("Claude Code v2.1.332.", "2.1.332"),
    ],
)
def test_the_version_is_read_from_what_version_prints(line: str, version: str) -> None:
    assert str(parse_version(line)) == version


def test_a_range_holds_its_ends_and_nothing_outside() -> None:
    tested = versions.TestedVersions("0.169.0", "0.171.0")
    assert str(tested) == "0.169.0 to 0.171.0"
    assert str(versions.TestedVersions("0.61.0", "0.61.0")) == "0.61.0"
    assert untested_warning("codex", tested, "codex-cli 0.169.0") is None
    assert untested_warning("codex", tested, "codex-cli 0.171.0") is None
    assert untested_warning("codex", tested, "codex-cli 0.170.3") is None
    newer = untested_warning("codex", tested, "codex-cli 0.172.0")
    assert newer is not None and "codex 0.172.0" in newer and "(0.169.0 to 0.171.0)" in newer
    assert untested_warning("codex", tested, "codex-cli 0.9.0") is not None
    assert untested_warning("codex", tested, "no version here") is None
    assert untested_warning("codex", None, "codex-cli 9.0.0") is None


@pytest.mark.parametrize("agent", sorted(PINNED))
def test_every_adapter_is_tested_on_its_pinned_version(agent: str) -> None:
    adapter = built_in(agent)
    assert adapter is not None and adapter.tested_versions is not None
    pinned = parse_version(PINNED[agent].rsplit("@", 1)[1])
    assert pinned is not None and pinned in adapter.tested_versions


@pytest.mark.parametrize("agent", sorted(PINNED))
def test_the_real_pinned_cli_is_inside_its_range(agent: str) -> None:
    """The real CLI, asked as submit asks it: no warning."""
    executable = require(agent)
    adapter = built_in(agent)
    assert adapter is not None
    warning = launch_warning(
        adapter.kind, adapter.executable, adapter.tested_versions, [str(executable)]
    )
    assert warning is None


def test_a_version_once_asked_is_remembered_until_the_program_changes(tmp_path: Path) -> None:
    """Gemini CLI takes seconds to print its version: submit asks each program once."""
    program = tmp_path / "gemini"
    asked = tmp_path / "asked"
    cache = tmp_path / "agent-versions.json"

    def install(version: str) -> None:
        program.write_text(f"#!/bin/sh\necho x >> '{asked}'\necho '{version}'\n")
        program.chmod(0o755)

    install("0.61.0")
    assert cached_version_line(str(program), cache) == "0.61.0"
    assert cached_version_line(str(program), cache) == "0.61.0"
    assert asked.read_text().count("x") == 1
    install("0.62.10")  # an upgrade in place: another size and time
    assert cached_version_line(str(program), cache) == "0.62.10"
    assert asked.read_text().count("x") == 2
    cache.write_text("not json")
    assert cached_version_line(str(program), cache) == "0.62.10"


def test_the_newest_tested_claude_is_inside_its_range() -> None:
    """Claude Code 2.1.332 (installed beside the pinned one by scripts/setup-agents), asked
    as submit asks it: no warning; one release later is outside the range again."""
    newest = CLAUDE_NEWEST
    if not newest.exists():
        missing_part(f"Claude Code 2.1.332 ({newest}: run scripts/setup-agents)")
    adapter = built_in("claude")
    assert adapter is not None and adapter.tested_versions is not None
    assert str(adapter.tested_versions) == "2.1.197 to 2.1.332"
    warning = launch_warning("claude", "claude", adapter.tested_versions, [str(newest)])
    assert warning is None
    later = untested_warning("claude", adapter.tested_versions, "2.1.333 (Claude Code)")
    assert later is not None and "(2.1.197 to 2.1.332)" in later
