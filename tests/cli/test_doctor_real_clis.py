"""`orchestrate doctor` against the real agent CLIs at the versions scripts/setup-agents
pins (tests/cli/test_doctor.py uses shell stand-ins): each is found, its own version
command read, its hook round trip proved, and what it can do for approvals said."""

from __future__ import annotations

import json
import os

import pytest

from tests.agents.clis import AGENT_BIN, PINNED, require

# Four real version commands and three hook probes: ~40 s at load ~20 on 2 cores.
pytestmark = [pytest.mark.agents, pytest.mark.slow]

APPROVALS = {
    "claude": "control-room: permission hook",
    "codex": "control-room: app-server (unix socket)",  # the pinned Codex's app-server
    "gemini": "keys only",
    "aider": "keys only",
    "qwen": "control-room: permission hook",  # Claude's decision format (app/agents/qwen.py)
}


def test_doctor_reports_each_pinned_cli_as_it_really_is(cli) -> None:  # type: ignore[no-untyped-def]
    for agent in PINNED:
        require(agent)
    path = f"{AGENT_BIN}{os.pathsep}{os.environ['PATH']}"
    result = cli("doctor", "--json", env={"PATH": path}, timeout=240)
    assert result.returncode == 0, result.stderr
    rows = {row["agent"]: row for row in map(json.loads, result.stdout.splitlines())}
    # and the ACP kinds, which run whatever command a job names (no pinned CLI of their own)
    assert set(rows) == set(PINNED) | {"acp", "gemini-acp", "qwen-acp"}
    for agent, package in PINNED.items():
        pinned = package.rsplit("@", 1)[1]
        row = rows[agent]
        assert row["path"] == str(AGENT_BIN / agent), row
        # the CLI's own words for its version (Claude adds "(Claude Code)", Codex
        # "codex-cli ", Aider "aider "), and the doctor's tested range starts at it
        # ("0.169.0", or "0.169.0 to 0.171.0" once a newer one passed the drift run)
        assert pinned in row["version"].split(), row
        assert row["tested"] == pinned or row["tested"].startswith(f"{pinned} to "), row
        assert "warning" not in row or not row["warning"], row
        assert row["ok"] is True, row
        assert row["approvals"] == APPROVALS[agent], row
        if agent == "aider":
            assert row["hooks"] == "not used"
        else:
            assert row["hooks"].startswith("ok ("), row
