"""The README's six rules load, and decide what the issue's "done" asks of them:
tests, lint and edits inside src/ go ahead; rm, git push and installs still ask."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.policy.decide import Question, decide
from app.policy.rules import load_policy

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(scope="module")
def readme_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    section = README.read_text().split("### Approval policy", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    path = tmp_path_factory.mktemp("readme") / "policy.toml"
    path.write_text(block.group(1))
    return path


@pytest.mark.parametrize(
    ("tool", "asked", "decision"),
    [
        ("Bash", "npm test -- --ci", "allow"),
        ("Bash", "npm run lint && npm test", "allow"),
        ("Edit", "src/app/main.ts", "allow"),
        ("Edit", "package.json", "ask"),
        ("Bash", "rm -rf dist", "ask"),
        ("Bash", "git push origin main", "ask"),
        ("Bash", "npm install left-pad", "ask"),
        ("Bash", "git push --force", "deny"),
    ],
)
def test_the_readme_rules_do_what_it_says(
    readme_policy: Path, tmp_path: Path, tool: str, asked: str, decision: str
) -> None:
    loaded = load_policy(readme_policy)
    assert loaded.policy is not None, loaded.problem
    assert len(loaded.policy.rules) == 6
    shell = tool == "Bash"
    question = Question("claude", tool, asked if shell else "", "" if shell else asked, tmp_path)
    assert decide(loaded.policy, question).decision == decision
