"""An ACP permission request judged by the approval policy (app/policy/) before anyone
is asked: what the policy is shown, the decision recorded with its rule, and every way
the policy may leave it to a person (no file, no rule, a broken file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acp.schema import ToolCallLocation, ToolCallUpdate

from app.agents.acp_protocol import policy_subject
from app.agents.acp_session import JobRecorder, policy_answer
from registry.jobs import Registry
from registry.vocabulary import Answer, JobStatus, MessageType

POLICY = """
[[rule]]
name = "touching"
tool = "shell"
command = "touch *"
decision = "allow"

[[rule]]
name = "no-rm"
tool = "shell"
command = "rm *"
decision = "deny"

[[rule]]
name = "docs"
tool = "Edit"
path = "docs/*"
decision = "allow"
"""


def shell(title: str, raw: object = None) -> ToolCallUpdate:
    return ToolCallUpdate(tool_call_id="t1", title=title, kind="execute", raw_input=raw)


def test_the_policy_sees_the_whole_command_or_the_file() -> None:
    assert policy_subject(shell("touch a && rm -rf b")) == ("Shell", "touch a && rm -rf b", "")
    raw = {"command": "touch done.txt", "description": "x"}
    assert policy_subject(shell("Run touch", raw)) == ("Shell", "touch done.txt", "")
    edit = ToolCallUpdate(tool_call_id="t2", title="Edit docs/a.md", kind="edit",
                          locations=[ToolCallLocation(path="/w/docs/a.md")])  # fmt: skip
    assert policy_subject(edit) == ("Edit", "", "/w/docs/a.md")
    edit_raw = ToolCallUpdate(tool_call_id="t3", kind="edit", raw_input={"file_path": "b.md"})
    assert policy_subject(edit_raw) == ("Edit", "", "b.md")
    other = ToolCallUpdate(tool_call_id="t4", title="think", kind="think")
    assert policy_subject(other) == ("think", "", "")


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[JobRecorder]:
    state_dir = tmp_path / "state"
    registry = Registry.open(state_dir)
    job = registry.register("tidy", "qwen-acp", "acp-policy")
    registry.set_status(job.job_id, JobStatus.RUNNING, "test")
    registry.db.close()
    found = JobRecorder(state_dir, job.job_id)
    try:
        yield found
    finally:
        found.close()


def decisions(recorder: JobRecorder) -> list[dict[str, object]]:
    return [m.payload for m in recorder.registry.bus.read_after(0)
            if m.type == MessageType.JOB_DECISION]  # fmt: skip


def test_a_rule_answers_and_its_name_is_on_record(recorder: JobRecorder, tmp_path: Path) -> None:
    (recorder.state_dir / "policy.toml").write_text(POLICY, encoding="utf-8")
    workdir = tmp_path / "work"
    (workdir / "docs").mkdir(parents=True)
    env: dict[str, str] = {}
    ask = policy_answer
    assert ask(recorder, "qwen-acp", shell("touch done.txt"), workdir, env) is Answer.YES
    assert ask(recorder, "qwen-acp", shell("rm -rf /"), workdir, env) is Answer.NO
    where = [ToolCallLocation(path=str(workdir / "docs" / "a.md"))]
    edit = ToolCallUpdate(tool_call_id="e", kind="edit", locations=where)
    assert ask(recorder, "qwen-acp", edit, workdir, env) is Answer.YES
    assert [(d["answer"], d["reason"]) for d in decisions(recorder)] == [
        ("yes", "policy rule 'touching'"),
        ("no", "policy rule 'no-rm'"),
        ("yes", "policy rule 'docs'"),
    ]
    # a compound with an unruled part, and an edit outside the rules: a person decides
    assert ask(recorder, "qwen-acp", shell("touch a; curl x"), workdir, env) is None
    outside = ToolCallUpdate(tool_call_id="o", kind="edit", raw_input={"path": "/etc/passwd"})
    assert ask(recorder, "qwen-acp", outside, workdir, env) is None
    assert len(decisions(recorder)) == 3


def test_no_policy_or_a_broken_one_asks_a_person(recorder: JobRecorder, tmp_path: Path) -> None:
    call = shell("touch done.txt")
    assert policy_answer(recorder, "qwen-acp", call, tmp_path, {}) is None
    (recorder.state_dir / "policy.toml").write_text("[[rule]\nbroken", encoding="utf-8")
    assert policy_answer(recorder, "qwen-acp", call, tmp_path, {}) is None
    named = {"ORCHESTRATE_POLICY": str(tmp_path / "missing.toml")}
    assert policy_answer(recorder, "qwen-acp", call, tmp_path, named) is None
    assert decisions(recorder) == []
