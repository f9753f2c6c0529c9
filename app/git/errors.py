"""Typed git failures; the CLI prints each as one line (`orchestrate: <reason>`), exit 1."""

from __future__ import annotations


class GitError(Exception):
    """Base of every git-side failure or refusal."""

    exit_code = 1


class GitNotInstalled(GitError):
    """No `git` on PATH."""


class NotARepository(GitError):
    """The directory is not inside a git work tree."""


class BaseNotFound(GitError):
    """The base branch asked for is not a local branch of the repository."""


class OperationInProgress(GitError):
    """The work tree is in the middle of a merge, rebase, cherry-pick or revert."""


class GitCommandFailed(GitError):
    """git refused a command; the message carries the first line of its stderr."""


class BaseMoved(GitError):
    """The base branch changed while a merge was being prepared; nothing was written."""


class CheckoutInTheWay(GitError):
    """The base is checked out in a work tree whose local changes the merge would overwrite."""
