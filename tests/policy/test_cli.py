"""`orchestrate policy check` and `policy replay` as real processes, and the line
`submit` gives when the policy is broken."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registry.activity import Observation
from registry.jobs import Registry

POLICY = """
[[rule]]
name = "tests"
tool = "shell"
command = "npm test*"
decision = "allow"

[[rule]]
name = "no-rm"
tool = "shell"
command = "rm *"
decision = "deny"

[[rule]]
name = "src"
tool = "Edit"
path = "src/**"
decision = "allow"
"""


@pytest.fixture
def policy(state_dir: Path) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "policy.toml"
    path.write_text(POLICY)
    return path


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--tool", "shell", "--command", "npm test -- --ci"], "allow by policy rule 'tests'"),
        (
            ["--tool", "Bash", "--command", "npm test; rm -rf ~"],
            "deny by policy rule 'no-rm': rm -rf ~",
        ),
        (
            ["--tool", "shell", "--command", "npm test $(x)"],
            "ask: a command substitution (a person is asked)",
        ),
        (["--tool", "shell", "--command", "git push"], "ask: no rule matched (a person is asked)"),
        (["--tool", "Edit", "--path", "src/app.py"], "allow by policy rule 'src'"),
        (["--tool", "Edit", "--path", "src/../../x"], "ask: no rule matched (a person is asked)"),
    ],
)
def test_check_prints_the_decision_and_its_rule(
    cli: Any, policy: Path, args: list[str], said: str
) -> None:
    result = cli("policy", "check", "--agent", "claude", *args)
    assert (result.returncode, result.stdout.strip()) == (0, said), result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--tool", "shell"], "a shell question needs --command"),
        (["--tool", "Edit", "--command", "x"], "--command is for shell tools"),
        (["--tool", "shell", "--command", "ls", "--path", "a"], "--path is the file"),
        (["--tool", "", "--command", "ls"], "--tool must be non-empty"),
        (["--tool", "shell", "--command", "ls", "--workdir", "/nonexistent"], "does not exist"),
        (["--tool", "trust"], "trust is decided per job"),
    ],
)
def test_check_refuses_bad_input_in_one_line(
    cli: Any, policy: Path, args: list[str], said: str
) -> None:
    result = cli("policy", "check", "--agent", "claude", *args)
    assert result.returncode != 0
    assert said in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_without_a_usable_policy_check_says_why(cli: Any, state_dir: Path, tmp_path: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    args = ["policy", "check", "--agent", "claude", "--tool", "shell", "--command", "ls"]
    missing = cli(*args)
    assert missing.returncode == 1 and "no policy file at" in missing.stderr
    (state_dir / "policy.toml").write_text("[[rule]\n")
    broken = cli(*args)
    assert broken.returncode == 1 and "every question asks" in broken.stderr
    assert broken.stderr.count("\n") == 1
    other = tmp_path / "other.toml"
    other.write_text('[[rule]]\nname = "all"\ndecision = "allow"\n')
    named = cli("--policy", str(other), *args)
    assert named.stdout.strip() == "allow by policy rule 'all'", named.stderr


def test_replay_shows_what_the_policy_would_have_decided(
    cli: Any, policy: Path, state_dir: Path
) -> None:
    registry = Registry.open(state_dir)
    job = registry.register("work", "claude", "alpha")
    registry.set_status(job.job_id, "running", "picked")
    asked = [("Bash", "npm test"), ("Bash", "rm -rf build"), ("Bash", "curl x | sh")]
    for tool, command in asked:
        for activity in ("waiting", "working"):
            registry.observe(job.job_id, Observation(activity, "hook:claude:PermissionRequest",
                                                     question="Allow?", tool=tool,
                                                     command=command))  # fmt: skip
    registry.db.close()
    result = cli("policy", "replay", "--hours", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 4
    assert lines[0].endswith("Bash `npm test`  ->  allow by policy rule 'tests'")
    assert lines[1].endswith("->  deny by policy rule 'no-rm': rm -rf build")
    assert lines[2].endswith("->  ask: no rule matched")
    assert (
        lines[3]
        == "3 questions: 1 allowed, 1 denied, 1 left to a person (67% decided by the policy)"
    )
    registry = Registry.open(state_dir)
    assert registry.get(job.job_id).activity == "working"  # it answered nothing
    registry.db.close()


@pytest.mark.parametrize("hours", ["0", "-1", "x", "100000"])
def test_replay_refuses_a_bad_period(cli: Any, policy: Path, hours: str) -> None:
    result = cli("policy", "replay", "--hours", hours)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr


def test_watch_submit_and_doctor_say_in_one_line_that_a_broken_policy_asks(
    state_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.commands.policy import warn_if_broken

    monkeypatch.delenv("ORCHESTRATE_POLICY", raising=False)
    state_dir.mkdir(parents=True, exist_ok=True)
    warn_if_broken(state_dir)
    assert capsys.readouterr().err == ""  # no policy: nothing to say
    (state_dir / "policy.toml").write_text('[[rule]]\nname = "\x1b[31m"\n')
    warn_if_broken(state_dir)
    err = capsys.readouterr().err
    assert err.startswith("orchestrate: policy not applied, every question asks: ")
    assert err.count("\n") == 1 and "\x1b" not in err
