"""The Review screen (`v` on a job): the diff of a work-tree job, and approve, request
changes or discard it.

The diff is read and laid out in a thread worker (`ReviewService.read`, then
`DiffDocument.build`); once it is drawn, the merge outlook (does it still merge,
who else touches its files) follows in a second worker, as it snapshots every
live job's tree.
Every action asks first, with Cancel focused.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from app.git.errors import GitError
from app.review.outlook import Outlook
from app.review.service import ReviewRead, ReviewService
from app.tmux.errors import TmuxError
from app.tui.commands import BACK
from app.tui.safe_text import as_text
from app.tui.screens.confirm import ConfirmScreen
from app.tui.screens.request_changes import RequestChangesScreen
from app.tui.source import SOURCE_ERRORS
from app.tui.widgets.diff_view import DiffDocument, DiffView, visible
from app.tui.widgets.review_files import ReviewFiles
from app.tui.widgets.theme import theme_style
from registry.review import ReviewNotFound, ReviewStamp
from registry.vocabulary import ReviewState

COMMITS_SHOWN = 5
FOLLOW_S = 1.5  # how often the screen checks whether its review moved (one SQLite read)
MESSAGE_LINES_SHOWN = 8  # of the changes asked for, in the question before they go
# What reading or acting on a review may raise: the registry's and the bus's
# errors, git's and tmux's refusals, a missing file. Each becomes a notice.
ACTION_ERRORS: tuple[type[Exception], ...] = (*SOURCE_ERRORS, GitError, TmuxError)


IN_REVIEW_STATES = (ReviewState.IN_REVIEW, ReviewState.APPROVED)
"""A review a person can still approve or send back."""


class ReviewScreen(Screen[None]):
    """One job's review; reloads itself after every action it takes."""

    DEFAULT_CSS = """
    ReviewScreen #review-title { height: 1; padding: 0 1; background: $panel; }
    ReviewScreen #review-info { height: auto; max-height: 9; padding: 0 1; }
    ReviewScreen #review-split { height: 1fr; }
    ReviewScreen #review-files {
        width: 32%; max-width: 56; height: 1fr; border: round $primary 50%;
    }
    ReviewScreen #review-files:focus-within { border: round $primary; }
    ReviewScreen #review-diff { width: 1fr; height: 1fr; border: round $primary 50%; }
    ReviewScreen #review-diff:focus { border: round $primary; }
    """

    BINDINGS = [
        Binding("a", "approve", "Approve & merge", tooltip="Approve and merge into the base"),
        Binding("x", "request_changes", "Request changes", tooltip="Send it back to its agent"),
        Binding("d", "discard", "Discard", tooltip="Delete its work tree and branch"),
        Binding("tab", "app.focus_next", "Files/diff", show=False),
        # after `x` its agent may ask before it works: answered from here too
        Binding("y", "answer(True)", "Yes", show=False),
        Binding("n", "answer(False)", "No", show=False),
        BACK,
    ]

    loaded: reactive[ReviewRead | None] = reactive(None, init=False)
    """The review and its diff as last read (None until the first read)."""
    outlook: reactive[Outlook | None] = reactive(None, init=False)
    """Whether the job's work still merges into its base, and who else touches its files."""

    class Read(Message):
        """The diff was read and laid out."""

        def __init__(
            self, read: ReviewRead, document: DiffDocument, *, keep_position: bool = False
        ) -> None:
            super().__init__()
            self.read = read
            self.document = document
            self.keep_position = keep_position

    class Followed(Message):
        """The review's stamp now: read again if it moved, look again if another did."""

        def __init__(self, stamp: ReviewStamp) -> None:
            super().__init__()
            self.stamp = stamp

    class Looked(Message):
        def __init__(self, outlook: Outlook | None) -> None:
            super().__init__()
            self.outlook = outlook

    class Failed(Message):
        def __init__(self, text: str, *, leave: bool = False) -> None:
            super().__init__()
            self.text = text
            self.leave = leave

    class Done(Message):
        """An action finished: say so, and read again (or leave after a discard)."""

        def __init__(self, text: str, *, leave: bool = False, problem: bool = False) -> None:
            super().__init__()
            self.text = text
            self.leave = leave
            self.problem = problem

    def __init__(self, service: ReviewService, job_id: str) -> None:
        super().__init__()
        self.service = service
        self.job_id = job_id
        self.reads = 0  # finished reads (tests and benches wait on it)
        self._stamp: ReviewStamp | None = None  # the review as last read

    def compose(self) -> ComposeResult:
        yield Static(Text(f"review · job {self.job_id} · reading…"), id="review-title")
        yield Static(Text(""), id="review-info")
        with Horizontal(id="review-split"):
            yield ReviewFiles(id="review-files")
            with Vertical(id="review-diff-box"):
                yield DiffView(id="review-diff")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#review-files").border_title = "files"
        self.query_one("#review-diff").border_title = "diff"
        self.query_one("#review-diff").focus()
        self.reload()
        self.set_interval(FOLLOW_S, self._follow)

    def reload(self) -> None:
        """Read the diff; the outlook follows once it is drawn (it snapshots every live
        job's tree, and must not slow the diff down)."""
        self._read()

    # -- reading (workers) --------------------------------------------------------
    @work(thread=True, exclusive=True, group="review-read", exit_on_error=False)
    def _read(self, keep_position: bool = False) -> None:
        try:
            read = self.service.read(self.job_id)
        except ReviewNotFound as error:
            self.post_message(self.Failed(str(error), leave=True))
            return
        except ACTION_ERRORS as error:
            self.post_message(self.Failed(f"Could not read job {self.job_id}'s diff: {error}"))
            return
        document = DiffDocument.build(read.diff.diff.files)
        self.post_message(self.Read(read, document, keep_position=keep_position))

    @work(thread=True, exclusive=True, group="review-follow", exit_on_error=False)
    def _follow(self) -> None:
        """Whether the review moved since it was read (its agent's round ended, someone
        else approved or sent it back, another job merged into the base)."""
        try:
            stamp = self.service.stamp(self.job_id)
        except ACTION_ERRORS:
            return  # a read failing says so; a check failing can wait for the next
        self.post_message(self.Followed(stamp))

    def on_review_screen_followed(self, message: Followed) -> None:
        before = self._stamp
        if before is None:  # not read yet: the read takes its own stamp
            return
        if message.stamp.own != before.own:
            self._stamp = message.stamp
            self._read(keep_position=True)
        elif message.stamp.moves != before.moves:
            self._stamp = message.stamp
            self._look()

    @work(thread=True, exclusive=True, group="review-outlook", exit_on_error=False)
    def _look(self) -> None:
        try:
            outlook = self.service.outlook(self.job_id)
        except ACTION_ERRORS:
            outlook = None
        self.post_message(self.Looked(outlook))

    def on_review_screen_read(self, message: Read) -> None:
        with self.app.batch_update():  # one frame for the files, the diff and the info
            files = self.query_one("#review-files", ReviewFiles)
            files.show_files(message.read.diff.diff.files, keep_cursor=message.keep_position)
            diff = self.query_one("#review-diff", DiffView)
            diff.show(message.document, keep_position=message.keep_position)
            self.loaded = message.read
        self._stamp = message.read.stamp
        self.reads += 1
        self.call_after_refresh(self._look)

    def on_review_screen_looked(self, message: Looked) -> None:
        self.outlook = message.outlook

    def on_review_screen_failed(self, message: Failed) -> None:
        self.notify(message.text, severity="error" if not message.leave else "warning")
        if message.leave:
            self.dismiss()

    def watch_loaded(self) -> None:
        self._show_info()

    def watch_outlook(self) -> None:
        self._show_info()

    def _show_info(self) -> None:
        read = self.loaded
        if read is None:
            return
        review, found = read.review, read.diff
        diff = found.diff
        title = Text(f"review · job {self.job_id} · ", style=theme_style(self.app, "foreground"))
        title.append(review.state, theme_style(self.app, "accent", bold=True))
        title.append(visible(f" · {review.branch} → {review.base}"))
        self.query_one("#review-title", Static).update(title)
        info = Text(no_wrap=False)
        info.append("why: ", theme_style(self.app, "foreground-darken-2"))
        info.append(visible(read.why) + "\n")
        uncommitted = " (uncommitted work included)" if found.dirty else ""
        info.append(
            f"{len(found.commits)} commit(s), {len(diff.files)} file(s) "
            f"+{diff.added} \u2212{diff.deleted} since {found.merge_base[:12]}{uncommitted}\n"
        )
        for commit in found.commits[:COMMITS_SHOWN]:
            info.append(f"  {commit.sha[:12]} ", theme_style(self.app, "warning"))
            info.append(visible(commit.subject) + "\n")
        if len(found.commits) > COMMITS_SHOWN:
            info.append(f"  … {len(found.commits) - COMMITS_SHOWN} more\n")
        if review.conflicts:
            info.append("last merge conflicted: ", theme_style(self.app, "error", bold=True))
            info.append(visible(", ".join(review.conflicts)) + "\n")
        outlook = self.outlook
        if outlook is not None:
            style = "success" if outlook.clean else "error" if outlook.clean is False else ""
            info.append("merge: ", theme_style(self.app, "foreground-darken-2"))
            info.append(visible(outlook.describe()), theme_style(self.app, style))
            if outlook.overlaps:
                info.append(" · ")
                info.append(visible(outlook.describe_overlaps()), theme_style(self.app, "warning"))
        info.rstrip()
        self.query_one("#review-info", Static).update(info)

    @on(DataTable.RowHighlighted, "#review-files")
    def _file_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The diff follows the file list's cursor, when the reader moves it (not when
        the list is filled again)."""
        if event.data_table.has_focus:
            self.query_one("#review-diff", DiffView).scroll_to_file(event.cursor_row)

    # -- actions --------------------------------------------------------------------
    def _state(self) -> str | None:
        return self.loaded.review.state if self.loaded is not None else None

    def action_approve(self) -> None:
        state = self._state()
        if state not in IN_REVIEW_STATES:
            self.notify(f"Job {self.job_id} is {state or 'not read yet'}: nothing to approve")
            return
        base = self.loaded.review.base if self.loaded else "its base"
        question = Text(f"Approve job {self.job_id} and merge it into {base}?")

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._act("approve")

        self.app.push_screen(ConfirmScreen(question, "Approve & merge"), confirmed)

    def action_request_changes(self) -> None:
        if self._state() not in IN_REVIEW_STATES:
            self.notify(f"Job {self.job_id} is not in review: nothing to send back")
            return

        def written(text: str | None) -> None:
            if not text:
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self._act("request_changes", text)

            question = Text(f"Send these changes to job {self.job_id}'s agent?\n\n")
            question.append_text(as_text(_clipped(text), "italic", one_line=False))
            self.app.push_screen(ConfirmScreen(question, "Send"), confirmed)

        self.app.push_screen(RequestChangesScreen(self.job_id), written)

    def action_discard(self) -> None:
        question = Text(
            f"Discard job {self.job_id}? Its work tree and branch are deleted, "
            "uncommitted work included."
        )

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._act("discard")

        self.app.push_screen(ConfirmScreen(question, "Discard"), confirmed)

    def action_answer(self, yes: bool) -> None:
        """y/n: answer the question the job's agent waits on (its permission prompt)."""
        self._act("answer", "yes" if yes else "no")

    @work(thread=True, group="review-action", exit_on_error=False)
    def _act(self, action: str, message: str = "") -> None:
        job_id = self.job_id
        try:
            if action == "approve":
                done = self.service.approve(job_id)
                if done.merged_commit is None:
                    files = ", ".join(c.describe() for c in done.conflicts)
                    text = (
                        f"Job {job_id} does not merge; nothing was merged. Conflicts: {files}. "
                        "x sends it back to its agent to resolve."
                    )
                    self.post_message(self.Done(text, problem=True))
                    return
                base = done.review.base
                text = f"Merged job {job_id} into {base} ({done.merged_commit[:12]})"
                self.post_message(self.Done(text))
            elif action == "answer":
                self.service.answer(job_id, message)
                self.post_message(self.Done(f"Answered {message} to job {job_id}'s agent"))
            elif action == "request_changes":
                self.service.request_changes(job_id, message)
                self.post_message(self.Done(f"Sent the changes to job {job_id}'s agent"))
            else:
                self.service.discard(job_id)
                self.post_message(self.Done(f"Discarded job {job_id}", leave=True))
        except ACTION_ERRORS as error:  # every refusal becomes a notice
            self.post_message(
                self.Done(f"Could not {action.replace('_', ' ')}: {error}", problem=True)
            )

    def on_review_screen_done(self, message: Done) -> None:
        self.notify(message.text, severity="error" if message.problem else "information")
        if message.leave:
            self.dismiss()
        else:
            self.reload()


def _clipped(message: str) -> str:
    """The first lines of a message, as the confirmation shows it."""
    lines = message.splitlines()
    if len(lines) <= MESSAGE_LINES_SHOWN:
        return message
    return "\n".join([*lines[:MESSAGE_LINES_SHOWN], f"\u2026 ({len(lines)} lines)"])
