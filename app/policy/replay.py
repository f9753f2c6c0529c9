"""`policy replay`: the policy run over the questions agents asked in a period, to see
what it would have decided before trusting it with the next day's.

It answers nothing and runs no reviewer (a reviewer is a command with effects of its
own): a question no rule decides is shown as left to the reviewer or the person.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from app.agents import built_in_kind
from app.policy.decide import Question, Verdict, decide
from app.policy.hook import job_workdir
from app.policy.rules import SHELL_TOOLS, Policy
from registry.questions import AskedQuestion
from registry.vocabulary import PolicyDecision


@dataclass(frozen=True)
class Replayed:
    """One recorded question and what the policy would have said of it."""

    asked: AskedQuestion
    verdict: Verdict


def replay(policy: Policy, asked: list[AskedQuestion], state_dir: Path) -> list[Replayed]:
    """The policy's verdict on each question (work trees read from the jobs' launch records)."""
    workdirs: dict[str, Path | None] = {}
    replayed = []
    for question in asked:
        if question.job_id not in workdirs:
            workdirs[question.job_id] = job_workdir(state_dir, question.job_id)
        replayed.append(
            Replayed(question, decide(policy, as_question(question, workdirs[question.job_id])))
        )
    return replayed


def as_question(asked: AskedQuestion, workdir: Path | None) -> Question:
    """A recorded wait as a policy question: a shell tool's ``command`` is the command,
    any other tool's is the file it touches (app/agents/base.py ``tool_command``)."""
    shell = asked.tool in SHELL_TOOLS
    return Question(
        agent=built_in_kind(asked.agent) or asked.agent,
        tool=asked.tool,
        command=asked.command if shell else "",
        path="" if shell else asked.command,
        workdir=workdir,
    )


@dataclass(frozen=True)
class Tally:
    """How a replay came out: counts per decision, and the share the policy decided."""

    total: int
    counts: Counter[PolicyDecision]

    @property
    def decided(self) -> int:
        return self.counts[PolicyDecision.ALLOW] + self.counts[PolicyDecision.DENY]

    @property
    def share(self) -> float:
        return self.decided / self.total if self.total else 0.0

    def line(self) -> str:
        return (
            f"{self.total} questions: {self.counts[PolicyDecision.ALLOW]} allowed, "
            f"{self.counts[PolicyDecision.DENY]} denied, "
            f"{self.counts[PolicyDecision.ASK]} left to a person "
            f"({self.share:.0%} decided by the policy)"
        )


def tally(replayed: list[Replayed]) -> Tally:
    return Tally(len(replayed), Counter(item.verdict.decision for item in replayed))
