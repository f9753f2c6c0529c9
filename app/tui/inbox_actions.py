"""The keys for the jobs that wait on a person: y/n/a answer, w opens the inbox,
tab jumps to the next one. A base class of ControlRoomApp, so app.py stays about
the app's plumbing. Which job is answered, and the answer's whole path, are the
approvals room's (app/approvals/target.py, app/approvals/answer.py)."""

from __future__ import annotations

from textual import work
from textual.app import App
from textual.message import Message
from textual.widgets import DataTable

from app.approvals.errors import UnrecognisedDialog
from app.approvals.target import answer_target, next_waiting
from app.tui.screens.inbox import InboxScreen
from app.tui.screens.main import MainScreen
from app.tui.source import SOURCE_ERRORS, AnswerOutcome, ControlRoomSource
from app.tui.widgets.jobs_table import JobsTable
from registry.vocabulary import Answer
from registry.wording import counted


class InboxActions(App[None]):
    """Answers run `orchestrate answer`'s code in a thread worker; each is shown as
    going ("answering yes…") until the registry confirms the agent moved on, or says
    it did not ("not confirmed: still waiting")."""

    main: MainScreen
    source: ControlRoomSource

    class Answered(Message):
        """An answer's worker is done: confirmed, not confirmed, or refused (``error``)."""

        def __init__(
            self, job_id: str, reply: Answer, outcome: AnswerOutcome | None, error: str = ""
        ) -> None:
            super().__init__()
            self.job_id = job_id
            self.reply = reply
            self.outcome = outcome
            self.error = error

    def _refuse_answer(self, text: str) -> None:
        self.notify(text, severity="warning")

    def _waiting_ids(self) -> list[str]:
        return [job.job_id for job in self.main.waiting_rows]

    def action_answer(self, word: str) -> None:
        """Answer the selected job if it waits, else the only job that waits; never a
        job that does not wait (app/approvals/target.py). ``word``: the binding's
        answer ("yes", "no", "always")."""
        reply = Answer(word)
        selected: str | None = getattr(self.screen, "selected_job_id", None)
        target = answer_target(selected, self._waiting_ids(), reply)
        if target.job_id is None:
            self._refuse_answer(target.refusal)
            return
        job_id = target.job_id
        job = self.main.query_one("#jobs", JobsTable).jobs.get(job_id)
        if job is not None and reply not in job.answers:
            offered = "/".join(answer[0] for answer in job.answers)
            self._refuse_answer(f"{job.agent} has no '{reply}' answer: {offered} for job {job_id}")
            return
        if self.main.answering.get(job_id, "").startswith("answering"):
            self._refuse_answer(f"Already answering job {job_id}: wait for it to be confirmed")
            return
        self._answer_state(job_id, f"answering {reply}…")
        self._answer(job_id, reply)

    @work(thread=True, exit_on_error=False, group="answer", description="Answering")
    def _answer(self, job_id: str, reply: Answer) -> None:
        """`orchestrate answer`'s code, then the registry's confirmation, off the loop."""
        try:
            outcome = self.source.answer(job_id, reply)
        except UnrecognisedDialog as error:  # nothing pressed: a person answers it
            said = f"{error} · enter steps into its pane to answer it there"
            self.post_message(self.Answered(job_id, reply, None, said))
        except SOURCE_ERRORS as error:
            self.post_message(self.Answered(job_id, reply, None, str(error)))
        else:
            self.post_message(self.Answered(job_id, reply, outcome))

    def on_inbox_actions_answered(self, message: Answered) -> None:
        job_id, reply, outcome = message.job_id, message.reply, message.outcome
        if outcome is None:
            self._answer_state(job_id, None)
            error = message.error
            said = error if job_id in error else f"job {job_id}: {error}"
            self.notify(f"Could not answer: {said}", severity="error")
        elif outcome.confirmed:
            self._answer_state(job_id, None)
            how = f" ({outcome.how})" if outcome.how else ""
            self.notify(f"Answered {reply} to {job_id}{how} · confirmed: now {outcome.now}")
        else:
            self._answer_state(job_id, f"⚠ {reply}: not confirmed, still waiting")
            self.notify(
                f"Answered {reply} to {job_id}, not confirmed: it is still waiting (its pane: l)",
                severity="warning",
            )

    def _answer_state(self, job_id: str, state: str | None) -> None:
        states = {key: value for key, value in self.main.answering.items() if key != job_id}
        if state is not None:
            states[job_id] = state
        self.main.answering = states

    def action_inbox(self) -> None:
        """The permission inbox, over the main screen (which keeps it up to date)."""
        if isinstance(self.screen, InboxScreen):
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(InboxScreen())

    def action_next_waiting(self) -> None:
        """tab: the next job waiting on a person, cycling (hidden ones are said)."""
        waiting = self._waiting_ids()
        if isinstance(self.screen, InboxScreen):
            table = self.screen.query_one("#waiting", DataTable)
            target = next_waiting(self.screen.selected_job_id, waiting)
            if target is not None:
                table.move_cursor(row=waiting.index(target))
            return
        jobs = self.main.query_one("#jobs", JobsTable)
        shown = [job_id for job_id in waiting if job_id in jobs.rows]
        self.main.close_bars()
        jobs.focus()
        if not waiting:
            self._refuse_answer("No job is waiting for an answer")
            return
        if not shown:
            self._refuse_answer(
                f"{counted(len(waiting), 'waiting job')} hidden by the filter: esc clears it"
            )
            return
        target = next_waiting(jobs.selected_job_id, shown)
        if target is not None:
            jobs.move_cursor(row=jobs.get_row_index(target))
