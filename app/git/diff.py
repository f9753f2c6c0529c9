"""A diff read once from git and split per file: counts, paths and patch text.

One `git diff -z --numstat --patch` gives both the counts (NUL-separated, so
any path survives) and the patch; the n-th patch section belongs to the n-th
numstat record, as git writes both from the same queue.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from app.git.runner import run_git

# Whatever the user's config says: no colour codes, no external diff program, no
# textconv filters, paths from the top: the output is parsed, and shown as it is.
DIFF_OPTIONS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--find-renames",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
_HEADER = b"\ndiff --git "


@dataclass(frozen=True)
class FileDiff:
    """One file's change: its path (and old path for a rename), line counts, patch."""

    path: str
    old_path: str | None
    added: int | None  # None for a binary file
    deleted: int | None
    patch: bytes

    @property
    def binary(self) -> bool:
        return self.added is None

    @property
    def change(self) -> str:
        """A one-letter kind, as `git status` shows it: A, D, M or R."""
        if self.old_path is not None:
            return "R"
        head = self.patch[:400]
        if b"\nnew file mode " in head:
            return "A"
        if b"\ndeleted file mode " in head:
            return "D"
        return "M"

    @property
    def text(self) -> str:
        """The patch as text (bytes that are not UTF-8 shown as U+FFFD)."""
        return self.patch.decode("utf-8", "replace")


@dataclass(frozen=True)
class Diff:
    """Every file's change, in git's order, and the raw patch."""

    files: tuple[FileDiff, ...]
    patch: bytes

    @property
    def added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def deleted(self) -> int:
        return sum(f.deleted or 0 for f in self.files)


def read_diff(cwd: Path | str, old: str, new: str, *, patch: bool = True) -> Diff:
    """The diff from commit or tree ``old`` to ``new``, read in one git call
    (``patch=False``: the counts only)."""
    args = ["diff", "-z", "--numstat", *(["--patch"] if patch else []), *DIFF_OPTIONS, old, new]
    result = run_git([*args, "--"], cwd)
    return parse_diff(result.stdout)


def parse_diff(output: bytes) -> Diff:
    """Split `git diff -z --numstat --patch` output into per-file changes."""
    stats: list[tuple[str, str | None, int | None, int | None]] = []
    position = 0
    while position < len(output):
        end = output.index(b"\0", position)
        record = output[position:end]
        position = end + 1
        if not record:  # the NUL that separates the numstat records from the patch
            break
        added, deleted, path = record.split(b"\t", 2)
        old_path: str | None = None
        if not path:  # a rename: the old and the new path follow as their own fields
            end = output.index(b"\0", position)
            old_path = _path(output[position:end])
            position = end + 1
            end = output.index(b"\0", position)
            path = output[position:end]
            position = end + 1
        stats.append((_path(path), old_path, _count(added), _count(deleted)))
    patch = output[position:]
    sections = _sections(patch)
    files = tuple(
        FileDiff(path, old_path, added, deleted, sections[n] if n < len(sections) else b"")
        for n, (path, old_path, added, deleted) in enumerate(stats)
    )
    return Diff(files=files, patch=patch)


def _sections(patch: bytes) -> list[bytes]:
    """The patch cut before each `diff --git` header (hunk lines never start so)."""
    if not patch:
        return []
    starts = [0]
    at = patch.find(_HEADER)
    while at != -1:
        starts.append(at + 1)
        at = patch.find(_HEADER, at + 1)
    starts.append(len(patch))
    return [patch[a:b] for a, b in itertools.pairwise(starts) if a < b]


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _count(raw: bytes) -> int | None:
    return None if raw == b"-" else int(raw)
