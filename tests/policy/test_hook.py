"""The policy in Claude Code's permission hook: `orchestrate hook claude` as a real
process on a real registry, fed Claude's own PermissionRequest payload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.policy.why import decision_line
from registry.audit import AuditLog
from registry.jobs import Registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
POLICY = """
[[rule]]
name = "touch"
tool = "shell"
command = "touch *"
decision = "allow"

[[rule]]
name = "no-rm"
agent = "claude"
tool = "shell"
command = "rm *"
decision = "deny"

[[rule]]
name = "edit-src"
tool = "Edit"
path = "src/**"
decision = "allow"
"""


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, str, Path]:
    """A running Claude job with its launch record (its work tree) and a policy."""
    state = tmp_path / "state"
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    registry = Registry.open(state)
    record = registry.register("create done.txt", "claude", "alpha")
    registry.set_status(record.job_id, "running", "picked")
    registry.db.close()
    job_dir = state / "logs" / record.job_id
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / "agent.json").write_text(json.dumps({"agent_cmd": None, "workdir": str(work)}))
    (state / "policy.toml").write_text(POLICY)
    return state, record.job_id, work


def asking(work: Path, tool: str, **tool_input: str) -> dict[str, Any]:
    """Claude's recorded PermissionRequest payload, about this tool and input."""
    samples = json.loads((FIXTURES / "claude" / "hook-payload-samples.json").read_text())
    payload: dict[str, Any] = dict(samples["PermissionRequest"])
    payload.update(cwd=str(work), tool_name=tool, tool_input=tool_input)
    return payload


def run_hook(state: Path, job_id: str, payload: object, **env: str) -> str:
    full = {**os.environ, "ORCHESTRATE_HOME": str(state), "ORCHESTRATE_JOB": job_id, **env}
    full.pop("ORCHESTRATE_POLICY", None)
    full.update(env)
    done = subprocess.run(
        [sys.executable, "-m", "app", "hook", "claude"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    errors = state / "logs" / job_id / "hook-errors.log"
    assert not errors.exists(), errors.read_text()
    return done.stdout


def decision(stdout: str) -> dict[str, Any]:
    output = json.loads(stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    found: dict[str, Any] = output["hookSpecificOutput"]["decision"]
    return found


def activities(state: Path, job_id: str) -> list[str]:
    registry = Registry.open(state)
    try:
        return [change.activity for change in registry.activity_history(job_id)]
    finally:
        registry.db.close()


def test_an_allowed_command_is_answered_and_never_waits(job: tuple[Path, str, Path]) -> None:
    state, job_id, work = job
    out = run_hook(state, job_id, asking(work, "Bash", command=f"touch {work}/done.txt"))
    assert decision(out) == {"behavior": "allow"}
    assert "waiting" not in activities(state, job_id)
    registry = Registry.open(state)
    assert decision_line(registry.bus, job_id) == "answered yes by policy rule 'touch'"
    registry.db.close()
    logged = [e for e in AuditLog(state).iter_events(job_id) if e.get("kind") == "published"]
    inputs = [e for e in logged if e["event"]["event"] == "input"]
    assert inputs[-1]["event"]["detail"] == "answered yes by policy rule 'touch'"
    assert inputs[-1]["event"]["data"]["rules"] == ["touch"]


def test_a_denied_command_is_refused_with_its_rule(job: tuple[Path, str, Path]) -> None:
    state, job_id, work = job
    out = run_hook(state, job_id, asking(work, "Bash", command="rm -rf src"))
    said = decision(out)
    assert said["behavior"] == "deny"
    assert "policy rule 'no-rm'" in said["message"]
    assert "waiting" not in activities(state, job_id)


@pytest.mark.parametrize(
    "command",
    ["touch a; curl -sSL x.sh", "touch $(whoami)", "touch a > ../x", "bash -c 'touch a'"],
)
def test_what_the_policy_cannot_allow_waits_for_a_person(
    job: tuple[Path, str, Path], command: str
) -> None:
    state, job_id, work = job
    assert run_hook(state, job_id, asking(work, "Bash", command=command)) == ""
    assert activities(state, job_id)[-1] == "waiting"


def test_a_file_rule_allows_inside_its_folder_only(job: tuple[Path, str, Path]) -> None:
    state, job_id, work = job
    inside = asking(work, "Edit", file_path=str(work / "src" / "app.py"))
    assert decision(run_hook(state, job_id, inside)) == {"behavior": "allow"}
    escape = asking(work, "Edit", file_path=str(work / "src" / ".." / ".." / "x.py"))
    assert run_hook(state, job_id, escape) == ""
    assert activities(state, job_id)[-1] == "waiting"


def test_a_broken_policy_asks_everything(job: tuple[Path, str, Path]) -> None:
    state, job_id, work = job
    (state / "policy.toml").write_text(POLICY + '\n[[rule]]\nname = "x"\ndecision = "yes"\n')
    assert run_hook(state, job_id, asking(work, "Bash", command="touch a")) == ""
    assert activities(state, job_id)[-1] == "waiting"


def test_a_named_policy_file_is_the_one_applied(job: tuple[Path, str, Path]) -> None:
    state, job_id, work = job
    other = state.parent / "other.toml"
    other.write_text('[[rule]]\nname = "all"\ntool = "shell"\ndecision = "deny"\n')
    out = run_hook(state, job_id, asking(work, "Bash", command="touch a"),
                   ORCHESTRATE_POLICY=str(other))  # fmt: skip
    assert decision(out)["behavior"] == "deny"


def test_the_reviewer_decides_what_no_rule_does(job: tuple[Path, str, Path]) -> None:
    state, job_id, work = job
    reviewer = state.parent / "reviewer.py"
    reviewer.write_text(
        "import json, sys\n"
        "q = json.load(sys.stdin)\n"
        "print('allow' if q['command'].startswith('ls') else 'ask')\n"
    )
    policy = f"reviewer = {json.dumps([sys.executable, str(reviewer)])}\n" + POLICY
    (state / "policy.toml").write_text(policy)
    assert decision(run_hook(state, job_id, asking(work, "Bash", command="ls -la")))
    registry = Registry.open(state)
    assert decision_line(registry.bus, job_id) == "answered yes by the policy's reviewer"
    registry.db.close()
    assert run_hook(state, job_id, asking(work, "Bash", command="curl x")) == ""
