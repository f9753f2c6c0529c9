"""Folder trust by policy: a ``tool = "trust"`` rule trusts orchestrate's own work
trees of the repository its ``repo`` names, and nothing else.

An agent's first run in a new folder asks whether to trust it (Claude Code,
Gemini CLI, Codex). A job whose work tree orchestrate made (``submit
--worktree``: ``<state>/worktrees/<job>``, checked out from a repository, on
record in the job's review) is the person's own code on a branch of its own; a
rule naming that repository lets the policy say yes for them. A folder the agent
was merely pointed at, a work tree made by hand, a repository the rule does not
name, or any question other than the trust dialog's own: the person is asked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from app.policy.decide import Verdict, first_match
from app.policy.rules import TRUST, Policy
from registry.review import ReviewStore
from registry.vocabulary import DecisionSource, PolicyDecision

if TYPE_CHECKING:
    from bus.messages import Bus

TRUST_QUESTIONS = frozenset(
    {
        "Is this a project you created or one you trust?",  # Claude Code
        "Do you trust the files in this folder?",  # Gemini CLI, Codex
        "Trust this folder?",  # Codex
    }
)
"""The trust dialogs' questions, as the adapters' screen rules read them. Claude's
``claude.trust`` rule also catches "Do you want to use this API key?": not trust."""
NOT_OURS = "not a work tree orchestrate made"


def is_trust_question(question: str) -> bool:
    return question.strip() in TRUST_QUESTIONS


def trust_verdict(
    policy: Policy, bus: Bus, state_dir: Path, job_id: str, agent: str, workdir: Path | None
) -> Verdict:
    """The trust rules' verdict on the job's folder: allow only when orchestrate made
    its work tree (``<state>/worktrees/<job>``, the agent inside it) from a
    repository a rule names."""
    review = ReviewStore(bus).find(job_id)
    ours = state_dir / "worktrees" / job_id
    if review is None or workdir is None or _real(review.worktree) != _real(ours):
        return Verdict(PolicyDecision.ASK, None, (), NOT_OURS)
    if not _real(workdir).is_relative_to(_real(ours)):
        return Verdict(PolicyDecision.ASK, None, (), NOT_OURS)
    repo = _real(review.repo)
    from fnmatch import fnmatchcase

    rule = first_match(
        rule
        for rule in policy.rules
        if rule.tool == TRUST
        and rule.repo is not None
        and (rule.agent is None or fnmatchcase(agent, rule.agent))
        and _real(rule.repo) == repo
    )
    if rule is None:
        return Verdict(PolicyDecision.ASK, None, (), f"no trust rule names {repo}")
    return Verdict(rule.decision, DecisionSource.POLICY, (rule.name,))


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))
