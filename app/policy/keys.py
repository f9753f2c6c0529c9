"""The policy for agents answered by keys (Gemini CLI, Aider): they have no hook or
server that takes a decision, so a question the policy decides is answered on the
agent's own dialog, by meaning (app/approvals/, the one answer path).

A key is not an answer: the policy decides the question on record (the tool and
command the agent's hook or screen reported), and its answer is typed only while
the dialog on screen asks that very question, read from the screen (same tool,
same command). Another dialog, a command cut short by the pane's width, or no
dialog at all, and nothing is typed: the question stays with the person.

Every observer runs this after its pass (the supervisor, a control room, a waiting
`submit`); one claim file per question (``logs/<job>/policy-<ms>.claim``, made
with O_EXCL) lets only one of them answer. The answer runs in a thread: a pass is
not held up by the dialog's confirmation.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from app.agents import built_in_kind
from app.approvals.errors import NotWaitingForPermission, UnrecognisedDialog
from app.policy.hook import has_policy, job_workdir
from app.policy.rules import SHELL_TOOLS, TRUST, load_policy, policy_path
from app.policy.trust import is_trust_question, trust_verdict
from app.tmux.errors import AnswerNotReceived
from registry.decisions import post_decision
from registry.errors import RegistryError
from registry.vocabulary import Activity

if TYPE_CHECKING:
    from app.approvals.answer import Answering
    from app.policy.decide import Question, Verdict
    from registry.activity import Observation
    from registry.records import Job

STRUCTURED_KINDS = frozenset({"claude", "codex"})
"""Kinds the policy answers through their hook or app-server (app/policy/hook.py):
a question of theirs that waits was left to the person there already."""
COMMAND_LIMIT = 500
"""A recorded command this long may have been cut (registry/activity.py MAX_TEXT)."""
CLAIM = "policy-{at}.claim"
ERRORS_LOG = "policy-errors.log"


class PolicyByKeys:
    """Per observer: the questions it has looked at (each once)."""

    def __init__(self, orch: Answering, env: Mapping[str, str] | None = None) -> None:
        self.orch = orch
        self.env = os.environ if env is None else env
        self.seen: set[tuple[str, int]] = set()
        self.threads: list[threading.Thread] = []

    def look(self, job_ids: list[str]) -> None:
        """After a pass: answer by the policy each of ``job_ids`` that waits on a
        question no one has looked at yet."""
        state_dir = self.orch.settings.state_dir
        if not has_policy(state_dir, self.env):
            return
        for job_id in job_ids:
            try:
                job = self.orch.registry.get(job_id)
            except RegistryError:
                continue
            question = self._question(job, state_dir)
            if question is None:
                continue
            thread = threading.Thread(
                target=self._answer, args=(job, question), name="policy-keys", daemon=True
            )
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]
            thread.start()

    def _question(self, job: Job, state_dir: Path) -> Question | None:
        """The policy's question for a job waiting now on a keys-answered agent."""
        if job.activity != Activity.WAITING or not job.waiting:
            return None
        kind = built_in_kind(job.agent) or job.agent
        mark = (job.job_id, job.activity_at_ms or 0)
        data = job.activity_data or {}
        trust = is_trust_question(str(data.get("question") or ""))
        if (kind in STRUCTURED_KINDS and not trust) or mark in self.seen:
            return None  # a structured channel's question was the policy's there already
        self.seen.add(mark)
        from app.policy.decide import Question

        workdir = job_workdir(state_dir, job.job_id)
        if trust:  # no hook ever asks this one: its dialog is the only way in
            return Question(kind, TRUST, workdir=workdir)
        tool, command = str(data.get("tool") or ""), str(data.get("command") or "")
        if not tool or not command or len(command) >= COMMAND_LIMIT:
            return None  # a question not fully on record
        if tool in SHELL_TOOLS:
            return Question(kind, tool, command=command, workdir=workdir)
        return Question(kind, tool, path=command, workdir=workdir)

    def _answer(self, job: Job, question: Question) -> None:
        """Decide, claim, and answer on the dialog; a failure leaves it to the person."""
        state_dir = self.orch.settings.state_dir
        try:
            verdict = self._verdict(job.job_id, question, state_dir)
            if verdict is None or verdict.answer is None or verdict.source is None:
                return
            if not claimed(state_dir / "logs" / job.job_id, job.activity_at_ms or 0):
                return
            from app.approvals.answer import answer_question

            noted: dict[str, object] = {"rules": list(verdict.rules), "tool": question.tool}
            answer_question(
                self.orch,
                job.job_id,
                verdict.answer,
                by=str(verdict.source),
                shows=lambda seen: same_question(seen, question),
                noted=noted,
            )
            post_decision(
                self.orch.registry.bus, job.job_id, verdict.answer, by=verdict.source,
                reason=verdict.by,
            )  # fmt: skip
        except (NotWaitingForPermission, UnrecognisedDialog, AnswerNotReceived) as error:
            log_problem(state_dir, job.job_id, str(error))
        except Exception as error:  # a policy failure never answers: the person does
            log_problem(state_dir, job.job_id, f"{type(error).__name__}: {error}")

    def _verdict(self, job_id: str, question: Question, state_dir: Path) -> Verdict | None:
        path, named = policy_path(state_dir, self.env)
        loaded = load_policy(path, named=named)
        if loaded.policy is None:
            return None
        if question.tool == TRUST:
            bus = self.orch.registry.bus
            return trust_verdict(
                loaded.policy, bus, state_dir, job_id, question.agent, question.workdir
            )
        from app.policy.decide import decide
        from app.policy.reviewer import run_reviewer

        argv = loaded.policy.reviewer
        return decide(
            loaded.policy, question, lambda asked: run_reviewer(argv, asked, env=self.env)
        )


def same_question(seen: Observation, question: Question) -> bool:
    """Whether the dialog read from the screen asks what the policy decided: the same
    command (spaces aside) of the same tool (any shell tool is the shell); for the
    folder-trust question, the trust dialog."""
    if question.tool == TRUST:
        return is_trust_question(seen.question)
    asked = question.command if question.is_shell else question.path
    same_tool = seen.tool == question.tool or (
        seen.tool in SHELL_TOOLS and question.tool in SHELL_TOOLS
    )
    return same_tool and bool(seen.command) and seen.command.split() == asked.split()


def claimed(job_dir: Path, at_ms: int) -> bool:
    """Take the one claim on answering this question (False: another observer has)."""
    try:
        job_dir.mkdir(parents=True, exist_ok=True)
        os.close(os.open(job_dir / CLAIM.format(at=at_ms), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return False
    return True


def log_problem(state_dir: Path, job_id: str, line: str) -> None:
    """Why the policy did not answer, for `doctor` and the person (never raised)."""
    with (
        contextlib.suppress(OSError),
        (state_dir / "logs" / ERRORS_LOG).open("a", encoding="utf-8") as log,
    ):
        log.write(f"{job_id}: {' '.join(line.split())[:500]}\n")
