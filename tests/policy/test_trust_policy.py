"""Folder trust by policy: a `tool = "trust"` rule trusts orchestrate's own work trees
of the repository it names. Real Claude Code 2.1.332 (its new trust dialog, "No,
exit" selected: answered by meaning) against the scripted model server: a job in a
work tree orchestrate made from the named repository is trusted with no person; a job
pointed at a plain folder still asks. Then the rule's checks, without an agent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.policy.decide import Verdict
from app.policy.rules import PolicyError, load_policy, parse_policy
from app.policy.trust import NOT_OURS, trust_verdict
from app.review.worktree import plan_worktree
from app.selftest.models.script import Script
from registry.jobs import Registry
from registry.review import ReviewStore
from registry.vocabulary import PolicyDecision
from tests.agents import clis
from tests.agents.sandbox import claude
from tests.agents.test_orchestrated_agents import supervise_until
from tests.ci import missing_part
from tests.plugin.models import ServeModel

VERSION = "2.1.332"
CLI = clis.AGENT_BIN / f"claude-{VERSION}"
GIT = [
    "git",
    "-c",
    "user.name=T",
    "-c",
    "user.email=t@example.com",
    "-c",
    "init.defaultBranch=main",
]


def repository(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run([*GIT, "init", "-q", str(path)], check=True)
    (path / "README").write_text("app\n")
    subprocess.run([*GIT, "-C", str(path), "add", "README"], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-qm", "first"], check=True)
    return path


def trust_rule(repo: Path, name: str = "own-trees") -> str:
    return f'[[rule]]\nname = "{name}"\ntool = "trust"\nrepo = "{repo}"\ndecision = "allow"\n'


@pytest.mark.agents
@pytest.mark.slow
def test_orchestrates_own_work_tree_is_trusted_and_nothing_else(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    if not CLI.exists():
        missing_part(f"Claude Code {VERSION} ({CLI}: run scripts/setup-agents)")
    from tests.agents.agent_cases import AGENTS

    repo = repository(tmp_path / "src" / "app")
    state_dir = orch.settings.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "policy.toml").write_text(trust_rule(repo))
    script = Script.shell_then_reply("touch done.txt", "Done.")
    jobs = {}
    for label, plan, work in (
        ("ours", plan_worktree(repo), repo),
        ("plain", None, repository(tmp_path / "elsewhere")),
    ):
        model = serve_model(AGENTS["claude"].api(), script)
        run = claude(tmp_path / label, work, model.base_url)
        config = Path(run.env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
        config.write_text(json.dumps({"hasCompletedOnboarding": True}))  # nothing trusted
        argv = [str(CLI), *run.argv[1:]]
        job = orch.submit("create done.txt", "claude", label, agent_cmd=argv, env=run.env,
                          workdir=None if plan else work, worktree=plan)  # fmt: skip
        jobs[label] = (job.job_id, config)

    ours, _ = jobs["ours"]
    past = supervise_until(  # trusted: Claude goes on to its first tool call
        orch,
        ours,
        lambda j: (j.activity_data or {}).get("tool") == "Bash",
        "the trusted job's Bash",
        60,
    )
    assert past.activity_data is not None and past.activity_data["command"] == "touch done.txt"
    inputs = [
        m.payload["data"]
        for m in orch.registry.bus.read_after(0)
        if m.type == "job.event" and m.payload["event"] == "input"
    ]
    assert [(i["answer"], i["by"], i["rules"]) for i in inputs] == [
        ("yes", "policy", ["own-trees"])
    ]
    assert inputs[0]["how"] == "meaning: Down Enter (Yes, I trust this folder)"

    plain, _ = jobs["plain"]
    waits = supervise_until(orch, plain, lambda j: j.waiting, "the plain folder's trust dialog")
    assert "trust" in (waits.activity_data or {}).get("question", "")
    # looked at by every pass since (the trusted job went through its dialog, a tool
    # call and more meanwhile), and left to a person: no rule names that folder
    for _ in range(3):
        orch.reconcile()
    assert orch.registry.get(plain).waiting
    assert not list((state_dir / "logs" / plain).glob("policy-*.claim"))
    for job_id in (ours, plain):
        orch.cancel(job_id, grace_sec=2)


def test_a_trust_rule_names_a_repo_and_nothing_else() -> None:
    with pytest.raises(PolicyError, match='tool = "trust" and repo go together'):
        parse_policy({"rule": [{"name": "t", "tool": "trust", "decision": "allow"}]})
    with pytest.raises(PolicyError, match='tool = "trust" and repo go together'):
        parse_policy({"rule": [{"name": "t", "tool": "Edit", "repo": "~/x", "decision": "allow"}]})
    with pytest.raises(PolicyError, match="names a repo only"):
        rule = {"name": "t", "tool": "trust", "repo": "~/x", "path": "a", "decision": "allow"}
        parse_policy({"rule": [rule]})


def test_only_a_work_tree_orchestrate_made_from_that_repo_is_trusted(tmp_path: Path) -> None:
    repo, other = repository(tmp_path / "app"), repository(tmp_path / "other")
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(trust_rule(repo))
    policy = load_policy(policy_file).policy
    assert policy is not None
    state_dir = tmp_path / "state"
    registry = Registry.open(state_dir)
    reviews = ReviewStore(registry.bus)

    def made(source: Path, tree: Path | None = None) -> tuple[str, Path]:
        job_id = registry.register("work", "claude", "s", sign_events=False).job_id
        tree = tree or state_dir / "worktrees" / job_id
        tree.mkdir(parents=True)
        branch = f"orchestrate/{job_id}"
        reviews.create(job_id, repo=str(source), base="main", base_commit="0" * 40,
                       branch=branch, worktree=str(tree), workdir=str(tree))  # fmt: skip
        return job_id, tree

    def verdict(job_id: str, workdir: Path) -> Verdict:
        return trust_verdict(policy, registry.bus, state_dir, job_id, "claude", workdir)

    ours, tree = made(repo)
    assert (verdict(ours, tree).decision, verdict(ours, tree).rules) == (
        PolicyDecision.ALLOW,
        ("own-trees",),
    )
    theirs, their_tree = made(other)
    no_rule = verdict(theirs, their_tree)
    assert no_rule.answer is None and "no trust rule names" in no_rule.reason
    by_hand, hand_tree = made(repo, tmp_path / "my-tree")  # not under <state>/worktrees
    assert verdict(by_hand, hand_tree).reason == NOT_OURS
    assert verdict(ours, tmp_path).reason == NOT_OURS  # the agent runs outside its tree
    unknown = registry.register("work", "claude", "s", sign_events=False).job_id
    assert verdict(unknown, tree).reason == NOT_OURS  # no work tree on record
