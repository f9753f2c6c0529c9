"""The approval policy in the control room: the inbox's line on which rule would
apply to a question the policy left to the person, and `A`, which makes a rule
from a waiting job's question (after a dialog that shows the rule's text) and adds
it to the policy file. A base class of ControlRoomApp, beside InboxActions.

The policy's own code decides (app/policy/would.py, app/policy/draft.py); this
module only finds the job, asks, and says what happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from textual.app import App

from app.agents import built_in_kind
from app.approvals.target import answer_target
from app.policy.decide import Question
from app.policy.draft import Draft, append_rule, draft_rule
from app.policy.hook import job_workdir
from app.policy.rules import PolicyError, policy_path
from app.policy.trust import is_trust_question
from app.policy.would import PolicyView, would_apply
from app.tui.screens.rule_confirm import RuleConfirmScreen
from app.tui.source import JobRow
from registry.vocabulary import Answer

TRUST_LINE = (
    'folder trust: only a tool = "trust" rule answers it, for the work trees orchestrate '
    "makes from the repository it names"
)


class PolicyActions(App[None]):
    """Off until `use_policy` names the state dir (`orchestrate watch` does): a
    control room over a fake source has no policy file."""

    policy: PolicyView | None = None
    policy_state_dir: Path | None = None
    waiting_rows: tuple[JobRow, ...]

    def use_policy(self, state_dir: Path, env: Mapping[str, str]) -> None:
        """Read the policy the hooks read: ``--policy``/ORCHESTRATE_POLICY, else
        ``<state dir>/policy.toml``."""
        path, named = policy_path(state_dir, env)
        self.policy = PolicyView(path, named)
        self.policy_state_dir = state_dir

    def question_of_row(self, job: JobRow) -> Question | None:
        """The policy's question for a waiting job: its agent kind, and the tool and
        command its wait names (None: it names no tool, so the policy cannot read it)."""
        asked = dict(job.asked)
        tool = asked.get("tool", "")
        if not tool:
            return None
        workdir = job_workdir(self.policy_state_dir, job.job_id) if self.policy_state_dir else None
        probe = Question(agent=built_in_kind(job.agent) or job.agent, tool=tool)
        command = asked.get("command", "")
        if probe.is_shell:
            return Question(probe.agent, tool, command=command, workdir=workdir)
        return Question(probe.agent, tool, path=command, workdir=workdir)

    def policy_line(self, job: JobRow) -> str | None:
        """What the inbox says under a waiting job's question; None without a policy."""
        if self.policy is None:
            return None
        question = self.question_of_row(job)
        if question is None and is_trust_question(dict(job.asked).get("question", "")):
            return TRUST_LINE
        if question is None:
            return "the policy cannot read this question: it names no tool"
        return would_apply(self.policy.current(), question)

    def action_make_rule(self) -> None:
        """`A`: a rule from the selected waiting job's question (else the only one's),
        shown in a dialog; added to the policy file on confirm."""
        if self.policy is None:
            self.notify("No policy file here: `orchestrate watch` names one", severity="warning")
            return
        selected: str | None = getattr(self.screen, "selected_job_id", None)
        waiting = {job.job_id: job for job in self.waiting_rows}
        target = answer_target(selected, list(waiting), Answer.YES)
        if target.job_id is None:
            self.notify(target.refusal, severity="warning")
            return
        job = waiting[target.job_id]
        question = self.question_of_row(job)
        loaded = self.policy.current()
        try:
            if question is None:
                raise PolicyError("its question names no tool: no rule is made")
            if loaded.problem is not None:
                raise PolicyError(f"the policy is broken, so it is left as it is: {loaded.problem}")
            names = frozenset(rule.name for rule in loaded.policy.rules) if loaded.policy else None
            draft = draft_rule(question, names or frozenset())
        except PolicyError as error:
            self.notify(f"No rule for job {job.job_id}: {error}", severity="warning")
            return
        path = self.policy.path
        self.push_screen(
            RuleConfirmScreen(job.job_id, draft.text, path),
            lambda confirmed: self._add_rule(job.job_id, draft, path) if confirmed else None,
        )

    def _add_rule(self, job_id: str, draft: Draft, path: Path) -> None:
        try:
            append_rule(path, draft)
        except PolicyError as error:
            self.notify(f"Rule not added: {error}", severity="error")
            return
        if self.policy is not None:
            self.policy.forget()  # reloaded: the inbox's line reads the new rule
        self.notify(
            f"Rule '{draft.rule.name}' added to {path}: it answers the next such question; "
            f"job {job_id} still waits (y or n)"
        )
