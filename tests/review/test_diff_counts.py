"""The +/- counts of a patch, counted in it, agree with git's own `--numstat` for
every kind of change: lines that look like headers, a missing final newline, CRLF,
binary files, renames, copies, deletions, mode changes."""

from __future__ import annotations

import os
from pathlib import Path

from app.git.diff import read_diff
from tests.review.git_repos import git, make_repo

TRICKY = "+++ not a header\n--- nor this\n@@ nor this @@\n\\ nor this\nplain\n"


def test_counts_from_the_patch_match_numstat(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {
            "tricky.txt": TRICKY,
            "no_newline.txt": "a\nb",
            "crlf.txt": "one\r\ntwo\r\n",
            "moved.txt": "".join(f"line {n}\n" for n in range(40)),
            "gone.txt": "bye\n",
            "script.sh": "echo hi\n",
            "image.bin": "",
        },
    )
    start = git(repo, "rev-parse", "HEAD")
    (repo / "tricky.txt").write_text("++ added plus\n-- added minus\n" + TRICKY[17:] + "+x\n")
    (repo / "no_newline.txt").write_text("a\nb\nc")
    (repo / "crlf.txt").write_bytes(b"one\r\n2\r\nthree\r\n")
    git(repo, "mv", "moved.txt", "renamed.txt")
    (repo / "renamed.txt").write_text("".join(f"line {n}\n" for n in range(39)) + "last\n")
    (repo / "gone.txt").unlink()
    os.chmod(repo / "script.sh", 0o755)
    (repo / "image.bin").write_bytes(bytes(range(256)) * 4)
    (repo / "new.txt").write_text("fresh\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "every kind")
    with_patch = read_diff(repo, start, "HEAD")
    from_git = read_diff(repo, start, "HEAD", patch=False)
    counted = {f.path: (f.change, f.added, f.deleted) for f in with_patch.files}
    expected = {f.path: (f.change, f.added, f.deleted) for f in from_git.files}
    assert counted == expected
    assert counted["image.bin"] == ("M", None, None)
    assert counted["renamed.txt"][0] == "R" and counted["tricky.txt"][1:] == (3, 1)
