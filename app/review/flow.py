"""The review flow, wired: a work-tree job follows its job, and people move it on.

WORKING when the agent starts, IN_REVIEW when it has finished its work
(`on_work_finished`), APPROVED and COMPLETED through `review approve`
(app/review/merging.py), back to WORKING with `request_changes`, CANCELLED or
FAILED with its job, or by `discard`.

`follow_jobs` catches a review up with its job's recorded status moves, dated
when the job moved, so it does not matter which process looks first (the
control room every few seconds, any `review` command, `job why`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.git.errors import GitError
from app.git.repo import Repository
from app.git.worktrees import delete_branch, remove_worktree
from app.review.finished import one_line, work_finished
from app.settings import Settings
from app.tmux.errors import TmuxError
from registry import states
from registry.activity import Observation
from registry.errors import IllegalTransition, RegistryError
from registry.jobs import Registry
from registry.review import LIVE, JobMove, Review, ReviewStore
from registry.vocabulary import Activity, JobStatus, ReviewState

if TYPE_CHECKING:
    from app.orchestration import Orchestrator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Discarded:
    """What `discard` did: the review after it, and whether the tree and branch went."""

    review: Review
    worktree_removed: bool
    branch_deleted: bool
    job_cancelled: bool


class ReviewFlow:
    """The review flow over one state dir; the CLI and the TUI share it."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: Registry | None = None,
        make_orchestrator: Callable[[], Orchestrator] | None = None,
        tmux_socket: str | None = None,
    ) -> None:
        """``make_orchestrator``: where panes and cancels come from (the control room
        shares its own); by default one is made for ``tmux_socket`` on first use."""
        self.settings = settings
        self.registry = registry if registry is not None else settings.open_registry()
        self.reviews = ReviewStore(self.registry.bus)
        self.tmux_socket = tmux_socket
        self._make_orchestrator = make_orchestrator
        self._orchestrator: Orchestrator | None = None

    @property
    def orchestrator(self) -> Orchestrator:
        """Panes and job cancels, made on first use (only request-changes and discard
        of a live job need tmux)."""
        if self._orchestrator is None:
            if self._make_orchestrator is not None:
                self._orchestrator = self._make_orchestrator()
            else:
                from app.orchestration import Orchestrator

                self._orchestrator = Orchestrator(self.settings, tmux_socket=self.tmux_socket)
        return self._orchestrator

    # -- following the job ----------------------------------------------------------
    def follow_jobs(self) -> list[Review]:
        """Move every review its job has moved past; the reviews that moved."""
        moved: list[Review] = []
        for review, job in self.reviews.job_moves():
            try:
                after = self._follow(review, job)
            except (IllegalTransition, GitError) as error:  # another process moved it first
                log.info("review %s: not caught up: %s", review.job_id, error)
                continue
            if after is not None:
                moved.append(after)
        return moved

    def _follow(self, review: Review, job: JobMove) -> Review | None:
        if job.at_ms < review.updated_at_ms:
            return None  # the job's last move is older than the review's (a reject)
        job_id, live = review.job_id, (review.state,)
        if review.state in (ReviewState.CANCELLED, ReviewState.FAILED):
            return self.reviews.move(job_id, "resume", "its job was resumed", expect=live)
        if review.state == ReviewState.ASSIGNED and job.status in (
            JobStatus.RUNNING,
            JobStatus.COMPLETED,
        ):
            started = job.started_at_ms if job.started_at_ms is not None else job.at_ms
            review = self.reviews.move(job_id, "start", "agent started", at_ms=started, expect=live)
            if job.status == JobStatus.RUNNING:
                return review
        if job.status == JobStatus.COMPLETED:
            return self.on_work_finished(job_id, one_line(job.reason), at_ms=job.at_ms)
        if job.status in (JobStatus.ERROR, JobStatus.CANCELLED):
            transition = "fail" if job.status == JobStatus.ERROR else "cancel"
            why = one_line(f"job {job.status}: {job.reason}")
            return self.reviews.move(job_id, transition, why, at_ms=job.at_ms)
        return None

    def on_work_finished(
        self, job_id: str, why: str = "agent finished its task", *, at_ms: int | None = None
    ) -> Review | None:
        """The agent has ended its work: WORKING -> IN_REVIEW (see finished.py)."""
        return work_finished(self.reviews, job_id, why, at_ms=at_ms)

    # -- people acting --------------------------------------------------------------
    def request_changes(self, job_id: str, message: str) -> Review:
        """Send ``message`` to the job's agent (pasted into its pane, then Enter) and
        put the job back to WORKING. Refused, with nothing sent, unless the job is
        IN_REVIEW (or APPROVED: its merge conflicted, and its agent is to resolve
        that), still running (an ended job's next round would never come up for
        review) and its agent's pane is alive.

        The agent is recorded as working on the changes before the review moves, so
        its idle from before the paste is never taken for the end of the new round."""
        from app.tmux.paste import paste_into_pane, pasteable

        review = self.reviews.get(job_id)
        states.next_state(states.WORKER, review.state, "reject", job_id)
        text = pasteable(message)
        job = self.registry.get(job_id)
        if job.status != JobStatus.RUNNING:
            raise IllegalTransition(
                f"job {job_id} has ended ({job.status}): its agent takes no more work; "
                "approve it, discard it, or submit a new job"
            )
        orchestrator = self.orchestrator
        pane_id = orchestrator.pane_for_job(job_id)
        if pane_id is None or not orchestrator.driver.pane_alive(pane_id):
            raise IllegalTransition(
                f"job {job_id} has no live agent pane to send the changes to (its agent has exited)"
            )
        paste_into_pane(orchestrator.driver, pane_id, text)
        with contextlib.suppress(RegistryError):  # it ended meanwhile: the move says so
            self.registry.observe(
                job_id, Observation(Activity.WORKING, "review", "changes requested")
            )
        return self.reviews.move(
            job_id,
            "reject",
            f"changes requested: {one_line(text)}",
            expect=(ReviewState.IN_REVIEW, ReviewState.APPROVED),
        )

    def discard(self, job_id: str) -> Discarded:
        """Throw the job's work away: its agent stopped if it still runs, its review
        CANCELLED (if live), its work tree and branch deleted, uncommitted work included."""
        review = self.reviews.get(job_id)
        job_cancelled = self._stop_agent(job_id)
        if review.state in LIVE:
            review = self.reviews.move(job_id, "cancel", "discarded by user")
        self.reviews.mark_discarded(job_id)
        removed, deleted = self.remove_tree_and_branch(review)
        review = self.reviews.mark_removed(job_id, discarded=True)
        return Discarded(review, removed, deleted, job_cancelled)

    def _stop_agent(self, job_id: str) -> bool:
        """Cancel the job if it is still live, and close its pane (the work tree is
        about to disappear from under it); whether the job was cancelled."""
        job = self.registry.get(job_id)
        if job.status not in (JobStatus.PENDING, JobStatus.RUNNING):
            return False
        self.registry.cancel(job_id, "discarded by user")
        try:
            pane_id = self.orchestrator.pane_for_job(job_id)
            if pane_id is not None:
                self.orchestrator.driver.kill_pane(pane_id)
        except TmuxError as error:
            log.warning("job %s: its pane could not be closed: %s", job_id, error)
        return True

    def remove_tree_and_branch(self, review: Review) -> tuple[bool, bool]:
        """Delete the review's work tree and branch; (tree removed, branch deleted)."""
        worktree = Path(review.worktree)
        repo = Repository.at(review.repo)
        existed = worktree.exists()
        remove_worktree(repo, worktree)
        return existed, delete_branch(repo, review.branch)


def on_work_finished(
    settings: Settings, job_id: str, why: str = "agent finished its task"
) -> Review | None:
    """The seam for whatever learns that a job's agent has ended its work (its
    completed event, or going idle after its task): a work-tree job comes up for
    review. A no-op (None) for any other job."""
    return ReviewFlow(settings).on_work_finished(job_id, why)


def review_why(settings: Settings, registry: Registry, job_id: str) -> str | None:
    """Why a work-tree job's review is where it is (caught up with the job first);
    None for a job without a work tree."""
    flow = ReviewFlow(settings, registry=registry)
    if flow.reviews.find(job_id) is None:
        return None
    flow.follow_jobs()
    return flow.reviews.why(job_id)
