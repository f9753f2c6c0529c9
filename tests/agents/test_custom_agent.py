"""A custom agent described by a few screen rules in agents.toml, end to end on real
tmux: its task pasted at its prompt, working, waiting with the command, answered with
its own keys, the command's effect on disk, idle, and the job completed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.agents.config import AgentConfigError, read_file
from app.control import Orchestrator

MYBOT = Path(__file__).resolve().parent / "mybot.py"
CONFIG = f"""
[agents.mybot]
command = [{str(sys.executable)!r}, {str(MYBOT)!r}]
deliver = "paste"
done_when = "idle"
keys = {{ yes = ["y", "Enter"], no = ["n", "Enter"] }}

[[agents.mybot.rules]]
name = "ask"
activity = "waiting"
pattern = '^(?P<question>Run (?P<command>.+)\\?) \\[y/n\\] ?$'
lines = 1

[[agents.mybot.rules]]
name = "thinking"
activity = "working"
pattern = '^thinking\\.\\.\\.'
lines = 1

[[agents.mybot.rules]]
name = "ready"
activity = "idle"
pattern = '^mybot> ?$'
lines = 1
"""


@pytest.fixture
def mybot(orch: Orchestrator, monkeypatch: pytest.MonkeyPatch) -> Orchestrator:
    orch.settings.state_dir.mkdir(parents=True, exist_ok=True)
    (orch.settings.state_dir / "agents.toml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "0.5")
    return orch


def activity(orch: Orchestrator, job_id: str) -> str | None:
    orch.reconcile()
    return orch.registry.get(job_id).activity


def test_a_custom_agent_is_supervised_from_its_rules(
    mybot: Orchestrator, workdir: Path, wait_for
) -> None:
    orch = mybot
    job = orch.submit("create done please", "mybot", "bot-1", workdir=workdir)
    assert orch.registry.get(job.job_id).done_when == "idle"
    wait_for(lambda: activity(orch, job.job_id) == "waiting", what="its question")
    record = orch.registry.get(job.job_id).activity_data or {}
    assert record["command"] == "touch done.txt"
    assert record["source"] == "screen:mybot.ask"
    assert "screen rule mybot.ask matched: `touch done.txt`" in orch.registry.why(job.job_id)
    assert not (workdir / "done.txt").exists()
    answered = orch.answer(job.job_id, "yes")
    assert answered.how == "keys y Enter"
    wait_for(lambda: (workdir / "done.txt").exists(), what="the command's effect")
    wait_for(lambda: orch.reconcile() and orch.registry.get(job.job_id).status == "completed",
             what="the job to complete once idle")  # fmt: skip
    changes = [c.activity for c in orch.registry.activity_history(job.job_id)]
    assert "working" in changes and "waiting" in changes and changes[-1] == "idle"
    assert "stayed idle" in orch.registry.why(job.job_id)
    assert orch.driver.pane_alive(str(orch.pane_for_job(job.job_id)))  # kept for follow-up


def test_a_follow_up_to_a_completed_job_is_supervised_again(
    mybot: Orchestrator, workdir: Path, wait_for
) -> None:
    """Its turn done and idle past the grace, the job completed with its agent kept at
    its prompt; `send` gives it more to do: the job runs again, the new question is
    seen with its command (before, it reached nobody: the job stayed completed), and
    the job completes again once the agent is idle."""
    orch = mybot
    job = orch.submit("create done please", "mybot", "bot-5", workdir=workdir)
    wait_for(lambda: activity(orch, job.job_id) == "waiting", what="its question")
    orch.answer(job.job_id, "yes")
    wait_for(lambda: orch.reconcile() and orch.registry.get(job.job_id).status == "completed",
             what="the job to complete once idle")  # fmt: skip
    assert orch.send_input(job.job_id, "and the other file", by="ann") == len("and the other file")
    again = orch.registry.get(job.job_id)
    assert again.status == "running" and again.completed_at is None
    assert "follow-up from ann" in orch.registry.why(job.job_id)
    wait_for(lambda: activity(orch, job.job_id) == "waiting", what="the follow-up's question")
    assert (orch.registry.get(job.job_id).activity_data or {})["command"] == "touch other.txt"
    orch.answer(job.job_id, "yes")
    wait_for(lambda: (workdir / "other.txt").exists(), what="the follow-up's command")
    wait_for(lambda: orch.reconcile() and orch.registry.get(job.job_id).status == "completed",
             what="the job to complete again")  # fmt: skip
    assert "followed up 1\u00d7" in orch.registry.why(job.job_id)


def test_answer_no_leaves_the_disk_alone(mybot: Orchestrator, workdir: Path, wait_for) -> None:
    orch = mybot
    job = orch.submit("create done please", "mybot", "bot-2", workdir=workdir)
    wait_for(lambda: activity(orch, job.job_id) == "waiting", what="its question")
    orch.answer(job.job_id, "no")
    wait_for(lambda: activity(orch, job.job_id) == "idle", what="idle again")
    assert not (workdir / "done.txt").exists()
    assert "skipped" in orch.pane_log(job.job_id).read_text()


def test_an_answer_the_agent_lacks_is_refused(mybot: Orchestrator, workdir: Path, wait_for) -> None:
    orch = mybot
    job = orch.submit("create done please", "mybot", "bot-3", workdir=workdir)
    wait_for(lambda: activity(orch, job.job_id) == "waiting", what="its question")
    with pytest.raises(Exception, match="has no 'always' answer"):
        orch.answer(job.job_id, "always")
    assert orch.registry.get(job.job_id).activity == "waiting"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[agents.x]\ncommand = 'one string'", "must be a list of words"),
        ("[agents.x]\ndeliver = 'stdin'", "deliver must be argv, paste or file"),
        ("[[agents.x.rules]]\nname = 'a'\nactivity = 'busy'\npattern = 'x'", "activity must be"),
        ("[[agents.x.rules]]\nname = 'a'\nactivity = 'idle'\npattern = '('", "bad pattern"),
        ("[agents.x\n", "not valid UTF-8 TOML"),
        (
            "[[agents.x.rules]]\nname = 'a'\nactivity = 'idle'\npattern = '^x> $'",
            "without trailing spaces",
        ),
    ],
)
def test_a_bad_agents_config_is_one_line_naming_the_file(
    tmp_path: Path, text: str, error: str
) -> None:
    path = tmp_path / "agents.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AgentConfigError, match=error) as raised:
        read_file(path)
    assert str(raised.value).startswith(str(path)) and "\n" not in str(raised.value)
