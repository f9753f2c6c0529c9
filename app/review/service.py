"""The review flow as the control room calls it: one object, every method blocking
(git, SQLite, tmux), so the TUI only ever calls it from thread workers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from app.review.diffs import ReviewDiff, read_review_diff
from app.review.flow import Discarded, ReviewFlow
from app.review.merging import Approval, approve
from app.review.outlook import Outlook, outlooks
from registry.errors import IllegalTransition
from registry.review import Review, ReviewStamp
from registry.vocabulary import Answer, ReviewState


@dataclass(frozen=True)
class ReviewRead:
    """What the Review screen shows first: the diff, why the job is where it is, and
    the review's stamp as it was read (a later stamp that differs means: read again)."""

    diff: ReviewDiff
    why: str
    stamp: ReviewStamp

    @property
    def review(self) -> Review:
        return self.diff.review


class ReviewService:
    """Reads and actions for the Review screen, over one ReviewFlow made on first use
    (opening it reads the database: never on the event loop)."""

    def __init__(self, make_flow: Callable[[], ReviewFlow]) -> None:
        self._make_flow = make_flow
        self._flow: ReviewFlow | None = None
        self._lock = threading.Lock()

    @property
    def flow(self) -> ReviewFlow:
        with self._lock:
            if self._flow is None:
                self._flow = self._make_flow()
            return self._flow

    def has_review(self, job_id: str) -> bool:
        """Whether the job ran in a work tree of its own."""
        return self.flow.reviews.find(job_id) is not None

    def read(self, job_id: str) -> ReviewRead:
        """The job's review and its diff against the merge base, uncommitted work included."""
        self.flow.follow_jobs()
        stamp = self.flow.reviews.stamp(job_id)  # before the read: a move during it shows
        review = self.flow.reviews.get(job_id)
        return ReviewRead(read_review_diff(review), self.flow.reviews.why(job_id), stamp)

    def stamp(self, job_id: str) -> ReviewStamp:
        """The review's stamp now (one SQLite read)."""
        return self.flow.reviews.stamp(job_id)

    def outlook(self, job_id: str) -> Outlook | None:
        """Whether the job's work merges into its base now, and who else touches its files."""
        return outlooks(self.flow.reviews.list()).get(job_id)

    def in_review(self) -> int:
        return self.flow.reviews.count(ReviewState.IN_REVIEW)

    def states(self, job_ids: list[str]) -> dict[str, str]:
        """The review state of each of these jobs that ran in a work tree."""
        return self.flow.reviews.states_of(job_ids) if job_ids else {}

    def ready_for_review(self) -> list[str]:
        """The jobs in review now, oldest first."""
        return [review.job_id for review in self.flow.reviews.list(state=(ReviewState.IN_REVIEW,))]

    def approve(self, job_id: str, mode: str = "merge") -> Approval:
        return approve(self.flow, job_id, mode)

    def answer(self, job_id: str, reply: str) -> None:
        """Answer (yes or no) the question the job's agent waits on; refused when it
        waits on none."""
        job = self.flow.registry.get(job_id)
        if not job.waiting:
            raise IllegalTransition(f"job {job_id} is not waiting for an answer")
        self.flow.orchestrator.answer(
            job_id, "yes" if reply == Answer.YES else "no", by="control room"
        )

    def request_changes(self, job_id: str, message: str) -> Review:
        return self.flow.request_changes(job_id, message)

    def discard(self, job_id: str) -> Discarded:
        return self.flow.discard(job_id)

    def follow_jobs(self) -> int:
        """Catch reviews up with their jobs; how many moved."""
        return len(self.flow.follow_jobs())
