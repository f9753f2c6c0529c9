"""`orchestrate review ...`: read a work-tree job's diff, approve and merge it, send it
back with a comment, or throw it away. Exit 0 ok, 1 refused, not found, or a merge
that did not happen (its conflicts listed file by file)."""

from __future__ import annotations

import sys
from typing import TextIO

import click

from app.commands.job import emit_json
from app.review.diffs import ReviewDiff, read_review_diff
from app.review.flow import ReviewFlow
from app.settings import Settings
from app.terminal.output import for_terminal
from registry.review import Review

JOB_ARGUMENT = click.argument("job_id", metavar="JOB")


def _flow(settings: Settings) -> ReviewFlow:
    """The flow, caught up with every job's status first (a job that completed since
    anyone looked comes up for review now)."""
    flow = ReviewFlow(settings)
    flow.follow_jobs()
    return flow


@click.group()
def review() -> None:
    """Review the work of jobs run in their own git work tree (submit --worktree)."""


@review.command("list")
@click.option("--json", "as_json", is_flag=True, help="Full records as a JSON array.")
@click.option("--all", "show_all", is_flag=True, help="Also merged, cancelled and failed ones.")
@click.pass_obj
def list_reviews(settings: Settings, as_json: bool, show_all: bool) -> None:
    """Work-tree jobs, oldest first, with whether each still merges cleanly into its
    base now and which other jobs touch the same files."""
    from app.review.outlook import outlooks

    flow = _flow(settings)
    reviews = [r for r in flow.reviews.list() if show_all or r.live]
    seen = outlooks(reviews)
    if as_json:
        emit_json(
            [
                {**r.to_dict(), "outlook": seen[r.job_id].to_dict() if r.job_id in seen else None}
                for r in reviews
            ],
            indent=2,
        )
        return
    if not reviews:
        click.echo("(no work-tree jobs)" if show_all else "(no live work-tree jobs; --all for all)")
        return
    header = ("JOB", "STATE", "BASE", "CHANGES", "MERGE")
    rows = [header]
    for item in reviews:
        changes = item.summary.describe() if item.summary else "-"
        outlook = seen.get(item.job_id)
        merge = "-"
        if outlook is not None:
            merge = outlook.describe()
            if outlook.overlaps:
                merge += "; " + outlook.describe_overlaps()
        elif item.merged_commit:
            merge = f"merged ({item.merge_mode}, {item.merged_commit[:12]})"
        rows.append((item.job_id, item.state, item.base, changes, merge))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo(for_terminal("  ".join([*cells, row[-1]]).rstrip()))


@review.command()
@JOB_ARGUMENT
@click.option("--stat", is_flag=True, help="Files and line counts only.")
@click.option("--json", "as_json", is_flag=True, help="The record, files and patch as JSON.")
@click.pass_obj
def show(settings: Settings, job_id: str, stat: bool, as_json: bool) -> None:
    """The job's diff against the merge base with its base, uncommitted work included.

    The patch goes to stdout exactly as git wrote it (so it can be piped to `git
    apply`); the lines about the job go to stderr.
    """
    flow = _flow(settings)
    found = read_review_diff(flow.reviews.get(job_id), patch=not stat, commits=True)
    diff = found.diff
    if as_json:
        record = {
            **found.review.to_dict(),
            "why": flow.reviews.why(job_id),
            "base_tip": found.base_tip,
            "merge_base": found.merge_base,
            "head": found.head,
            "uncommitted": found.dirty,
            "commits": [{"sha": c.sha, "subject": c.subject} for c in found.commits],
            "files": [
                {
                    "path": f.path,
                    "old_path": f.old_path,
                    "change": f.change,
                    "added": f.added,
                    "deleted": f.deleted,
                    "binary": f.binary,
                }
                for f in diff.files
            ],
        }
        if not stat:
            record["patch"] = diff.patch.decode("utf-8", "replace")
        emit_json(record, indent=2)
        return
    _describe(found.review, flow.reviews.why(job_id), found, sys.stderr)
    if stat:
        _stat(found)
        return
    if sys.stdout.isatty():
        _coloured_patch(diff.patch.decode("utf-8", "replace"))
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(diff.patch)
        sys.stdout.buffer.flush()


def _describe(review: Review, why: str, found: ReviewDiff, stream: TextIO) -> None:
    diff = found.diff
    uncommitted = ", uncommitted work included" if found.dirty else ""
    lines = [
        f"job {review.job_id} \u00b7 {review.state} \u00b7 {review.branch} \u2192 {review.base}",
        f"why: {why}",
        f"merge base {found.merge_base[:12]}: {len(found.commits)} commit(s), "
        f"{len(diff.files)} file(s) +{diff.added} \u2212{diff.deleted}{uncommitted}",
    ]
    lines += [f"  {c.sha[:12]} {c.subject}" for c in found.commits[:20]]
    for line in lines:
        stream.write(for_terminal(line, stream) + "\n")
    stream.flush()


def _stat(found: ReviewDiff) -> None:
    for item in found.diff.files:
        counts = "binary" if item.binary else f"+{item.added} \u2212{item.deleted}"
        name = f"{item.old_path} \u2192 {item.path}" if item.old_path else item.path
        click.echo(for_terminal(f"{item.change}  {counts:>12}  {name}"))


def _coloured_patch(text: str) -> None:
    """The patch for a person at a terminal: controls made visible, +/- coloured."""
    for line in text.splitlines():
        shown = for_terminal(line)
        if line.startswith(("+++", "---", "diff --git", "index ")):
            click.echo(click.style(shown, bold=True))
        elif line.startswith("@@"):
            click.echo(click.style(shown, fg="cyan"))
        elif line.startswith("+"):
            click.echo(click.style(shown, fg="green"))
        elif line.startswith("-"):
            click.echo(click.style(shown, fg="red"))
        else:
            click.echo(shown)


@review.command()
@JOB_ARGUMENT
@click.option("--merge", "mode", flag_value="merge", default=True, help="A merge commit (default).")
@click.option("--squash", "mode", flag_value="squash", help="One new commit on the base.")
@click.option("--rebase", "mode", flag_value="rebase", help="The job's commits replayed on top.")
@click.pass_obj
def approve(settings: Settings, job_id: str, mode: str) -> None:
    """Approve the job's work and merge its branch into its base.

    Uncommitted work in its tree is committed on its branch first. A conflict
    merges nothing: the base is untouched, the job stays APPROVED, and the
    conflicting files are listed (exit 1); approving again retries.
    """
    from app.review.merging import approve as approve_job

    done = approve_job(_flow(settings), job_id, mode)
    review = done.review
    if done.committed_uncommitted:
        click.echo(
            f"committed the uncommitted work on {review.branch} ({done.committed_uncommitted[:12]})"
        )
    if done.merged_commit is not None:
        where = "" if done.moved_in == "ref" else f" (checked out in {done.moved_in}: updated)"
        click.echo(
            f"job {job_id} merged into {review.base} ({mode}, {done.merged_commit[:12]}){where}"
        )
        return
    for conflict in done.conflicts:
        click.echo(for_terminal(f"conflict  {conflict.describe()}"))
    click.echo(
        f"orchestrate: job {job_id} does not merge into {review.base} "
        f"({len(done.conflicts)} conflicting file(s)); {review.base} is untouched and the job "
        f"stays APPROVED (`orchestrate review request-changes {job_id} -m TEXT` has its agent "
        "resolve it)",
        err=True,
    )
    raise click.exceptions.Exit(1)


@review.command("request-changes")
@JOB_ARGUMENT
@click.option("--message", "-m", required=True, metavar="TEXT", help="What to change.")
@click.pass_obj
def request_changes(settings: Settings, job_id: str, message: str) -> None:
    """Send TEXT to the job's agent (pasted into its pane) and put it back to WORKING."""
    after = _flow(settings).request_changes(job_id, message)
    click.echo(f"job {job_id}: changes sent to its agent; {after.state}")


@review.command()
@JOB_ARGUMENT
@click.pass_obj
def discard(settings: Settings, job_id: str) -> None:
    """Throw the job's work away: its work tree (uncommitted work included) and branch."""
    done = _flow(settings).discard(job_id)
    review = done.review
    parts = [
        "work tree removed" if done.worktree_removed else "work tree was already gone",
        f"branch {review.branch} deleted" if done.branch_deleted else "no branch left",
    ]
    if done.job_cancelled:
        parts.insert(0, "job cancelled")
    click.echo(f"job {job_id} discarded: {', '.join(parts)}")
