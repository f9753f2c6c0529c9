"""Bad input to the ACP kinds: one readable line on stderr, a non-zero exit, nothing
stored (`submit`), and `acp-run` refusing what is not an ACP job of this registry."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from registry.jobs import Registry

FAKE_AGENT = f"{sys.executable} -m tests.acp.fake_agent"


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--agent", "acp"], "needs the ACP agent's command: --agent-cmd"),
        (["--agent", "acp", "--agent-cmd", "no-such-acp-agent --acp"], "'no-such-acp-agent'"),
        (["--agent", "acp", "--agent-cmd", "/no/such/dir/agent"], "not an executable"),
    ],
)
def test_submit_refuses_an_acp_command_it_cannot_run(
    cli, state_dir: Path, tmux_socket: str, args: list[str], said: str
) -> None:
    result = cli("submit", "--no-wait", "--agent-session", "acp-bad", "--prompt", "x", *args)
    assert result.returncode != 0
    assert said in one_line(result.stderr)
    if (state_dir / "state.db").exists():
        registry = Registry.open(state_dir)
        assert registry.list() == []
        registry.db.close()


def test_the_gemini_preset_needs_gemini_on_path(cli, tmux_socket: str, tmp_path: Path) -> None:
    tmux = shutil.which("tmux")
    assert tmux is not None
    (tmp_path / "tmux").symlink_to(tmux)  # tmux, and no gemini
    result = cli("submit", "--no-wait", "--agent", "gemini-acp", "--agent-session", "acp-bad",
                 "--prompt", "x", env={"PATH": str(tmp_path)})  # fmt: skip
    assert result.returncode != 0
    assert "'gemini'" in one_line(result.stderr)


@pytest.fixture
def jobs(state_dir: Path) -> dict[str, str]:
    registry = Registry.open(state_dir)
    found = {
        "acp": registry.register("x", "acp", "s").job_id,
        "claude": registry.register("x", "claude", "s").job_id,
    }
    registry.db.close()
    return found


@pytest.mark.parametrize(
    ("which", "extra", "said"),
    [
        ("missing", [], "no job 'deadbeef'"),
        ("claude", [], "is a claude job, not an ACP one"),
        ("acp", ["--workdir", "/no/such/dir"], "'/no/such/dir' does not exist"),
        ("acp", ["--load-session", " "], "--load-session must not be empty"),
    ],
)
def test_acp_run_refuses_what_is_not_an_acp_job_here(
    cli, jobs: dict[str, str], tmp_path: Path, which: str, extra: list[str], said: str
) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("x\n")
    job_id = jobs.get(which, "deadbeef")
    args = ["--job", job_id, "--workdir", str(tmp_path), "--prompt-file", str(prompt), *extra]
    result = cli("acp-run", *args, "--", *FAKE_AGENT.split())
    assert result.returncode != 0
    assert said in one_line(result.stderr)


def test_acp_run_needs_the_agent_command(cli, jobs: dict[str, str], tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("x\n")
    result = cli("acp-run", "--job", jobs["acp"], "--workdir", str(tmp_path),
                 "--prompt-file", str(prompt))  # fmt: skip
    assert result.returncode == 2
    assert "AGENT_ARGV" in one_line(result.stderr)


def test_acp_run_of_a_command_that_is_not_there_says_so(
    cli, jobs: dict[str, str], tmp_path: Path
) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("x\n")
    result = cli("acp-run", "--job", jobs["acp"], "--workdir", str(tmp_path),
                 "--prompt-file", str(prompt), "--", "no-such-acp-agent")  # fmt: skip
    assert result.returncode == 127
    assert "command not found: no-such-acp-agent" in result.stdout
    assert os.environ.get("ORCHESTRATE_JOB") is None
