"""A diff read once from git and split per file: counts, paths and patch text.

One `git diff -z --raw --numstat --patch` gives the kinds, the counts
(NUL-separated, so any path survives) and the patch; the n-th record of each
part belongs to the same file, as git writes all three from one queue.
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
    """One file's change: its kind (git's status letter: A, D, M, R, C, T), its path
    (and old path for a rename or copy), its line counts, and its patch."""

    path: str
    old_path: str | None
    change: str
    added: int | None  # None for a binary file
    deleted: int | None
    patch: bytes

    @property
    def binary(self) -> bool:
        return self.added is None

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
    (``patch=False``: the kinds and counts only)."""
    wanted = ["--raw", "--numstat", *(["--patch"] if patch else [])]
    result = run_git(["diff", "-z", *wanted, *DIFF_OPTIONS, old, new, "--"], cwd)
    return parse_diff(result.stdout)


def read_worktree_diff(
    worktree: Path, base: str, *, env: dict[str, str] | None = None, patch: bool = True
) -> Diff:
    """The diff from the merge base of ``base`` and HEAD to the work tree as it is
    (`git diff --merge-base`: one git call). Untracked files count only when the
    index (``env``'s GIT_INDEX_FILE) holds them as intent-to-add."""
    wanted = ["--raw", "--numstat", *(["--patch"] if patch else [])]
    args = ["diff", "-z", *wanted, *DIFF_OPTIONS, "--merge-base", base, "--"]
    return parse_diff(run_git(args, worktree, env=env).stdout)


class _Fields:
    """A cursor over NUL-terminated fields."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def peek(self) -> bytes:
        return self.data[self.position : self.position + 1]

    def take(self) -> bytes:
        end = self.data.index(b"\0", self.position)
        field = self.data[self.position : end]
        self.position = end + 1
        return field


def parse_diff(output: bytes) -> Diff:
    """Split `git diff -z --raw --numstat [--patch]` output into per-file changes:
    the raw records (kind, paths), as many numstat records (counts), a NUL, the patch."""
    fields = _Fields(output)
    raw: list[tuple[str, str | None, str]] = []
    while fields.peek() == b":":
        kind = fields.take().split()[-1].decode("ascii", "replace")[:1]
        first = _path(fields.take())
        if kind in ("R", "C"):
            raw.append((kind, first, _path(fields.take())))
        else:
            raw.append((kind, None, first))
    counts: list[tuple[int | None, int | None]] = []
    for _ in raw:
        added, deleted, path = fields.take().split(b"\t", 2)
        if not path:  # a rename or copy: its two paths follow as fields of their own
            fields.take()
            fields.take()
        counts.append((_count(added), _count(deleted)))
    if fields.peek() == b"\0":  # the NUL between the records and the patch
        fields.position += 1
    patch = output[fields.position :]
    sections = _sections(patch)
    files = tuple(
        FileDiff(
            path=path,
            old_path=old_path,
            change=kind,
            added=counts[n][0],
            deleted=counts[n][1],
            patch=sections[n] if n < len(sections) else b"",
        )
        for n, (kind, old_path, path) in enumerate(raw)
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
