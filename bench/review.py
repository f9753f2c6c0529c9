"""Benchmark the review path on a 10,000-line diff against `git diff` itself.

Run:  .venv/bin/python -m bench.review [--lines 10000] [--files 20] [--runs 15]

State: a fresh repository in a temp dir; a job with its own work tree (as
`submit --worktree` makes it) whose branch changes `--files` Python files, most
of it committed and the last file left uncommitted, `--lines` changed lines in
all. Every case reads the same diff (merge base -> the work tree as it is):

* git diff: `git diff <merge-base>` in the job's work tree, output read through a
  pipe: what a person would type, and the yardstick (goal: review <= 1.5x it).
* by hand: the same facts as `review show` from git by hand, one command after
  the other: `git merge-base`, `git diff`, `git status` (uncommitted and untracked
  files), `git log base..HEAD` (the commits).
* our git diff: the one `git diff -z --raw --patch` that review show runs.
* review show (in process): `read_review_diff`, what `review show` and the
  Review screen read: the diff, the tree's status, the tips and the commits
  (with their boundary: the merge base), four git processes at once, parsed.
* review show (CLI): `orchestrate review show JOB > pipe`, a whole process
  (Python start and imports included); `orchestrate --version` is that floor.
* Review screen: a headless Textual app (120x40) pushes the Review screen; from
  the push to the first frame drawn with the diff in it (read in a worker, laid
  out with `DiffDocument.build`, only the visible lines rendered). The same on a
  2-line diff shows what the diff's size costs; the same screen on the 2-line
  diff with its read done beforehand (no git) is this screen's own floor in
  Textual (compose, CSS, layout, the footer, first frame); an empty screen pushed
  by the same app is Textual's floor for any screen. The merge outlook, which the
  screen asks for once the diff is drawn, is left out of these (it would run
  beside the timed frame).

Wall times grow with the machine's load (shared cores); CPU times (this process
and its git children, from getrusage) much less, so both are shown. The cases
run interleaved, one run of each per round (the screen cases in their own
rounds), so a change of load hits them all alike.

Each case runs `--runs` times after one warm-up; the table shows medians and p90.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

ROOT = Path(__file__).resolve().parent.parent

SIZE = (120, 40)
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def build(scratch: Path, lines: int, files: int) -> tuple[Path, tuple[str, str], Path]:
    """The state dir, the big job and a small one (a 2-line diff), the big one's tree."""
    from app.review.flow import ReviewFlow
    from app.review.worktree import plan_worktree, prepare_worktree
    from app.settings import Settings
    from registry.jobs import Registry
    from tests.review.git_repos import git, make_repo

    per_file = lines // (2 * files)  # each changed line: one removed, one added
    originals = {
        f"pkg/module_{n:02d}.py": "".join(
            f"def function_{n}_{i}(value: int) -> int:\n    return value + {i}\n"
            for i in range(per_file // 2)
        )
        for n in range(files)
    }
    repo = make_repo(scratch / "repo", originals)
    settings = Settings(state_dir=scratch / "state")
    registry = Registry.open(settings.state_dir, audited=False)
    job = registry.register("bench: rewrite every module", "bench", "bench", sign_events=False)
    tree = prepare_worktree(settings, registry, job.job_id, plan_worktree(repo)).path
    registry.set_status(job.job_id, "running", "bench")
    for index, (name, text) in enumerate(sorted(originals.items())):
        changed = text.replace("return value +", "return value * 2 +")
        changed = changed.replace("(value: int) -> int:", "(value: int) -> int:  # doubled")
        (tree / name).write_text(changed, encoding="utf-8")
        if index < files - 1:  # the last one stays uncommitted
            git(tree, "add", name)
    git(tree, "commit", "-q", "-m", "rewrite the modules")
    registry.publish(job.job_id, "completed", "done")
    small = registry.register("bench: one small change", "bench", "bench", sign_events=False)
    small_tree = prepare_worktree(settings, registry, small.job_id, plan_worktree(repo)).path
    registry.set_status(small.job_id, "running", "bench")
    first = sorted(originals)[0]
    (small_tree / first).write_text(originals[first].replace("+ 0\n", "+ 100\n", 1))
    registry.publish(small.job_id, "completed", "done")
    ReviewFlow(settings, registry=registry).follow_jobs()
    return settings.state_dir, (job.job_id, small.job_id), tree


def cpu_now() -> float:
    """CPU seconds used so far by this process (all threads) and its finished children
    (git): unlike the wall clock, not inflated by other work on a shared machine."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


Samples = tuple[list[float], list[float]]  # (wall seconds, cpu seconds) per run


def interleaved(cases: dict[str, Callable[[], object]], runs: int) -> dict[str, Samples]:
    """Each case once per round, in a rotating order, after one warm-up round."""
    names = list(cases)
    for name in names:
        cases[name]()
    samples: dict[str, Samples] = {name: ([], []) for name in names}
    for round_number in range(runs):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            cpu, start = cpu_now(), time.perf_counter()
            cases[name]()
            samples[name][0].append(time.perf_counter() - start)
            samples[name][1].append(cpu_now() - cpu)
    return samples


async def screen_open(
    cases: dict[str, Callable[[], Screen[None]]], runs: int
) -> dict[str, Samples]:
    """Push each case's screen once per round (rotating), timed from the push to the
    first frame drawn with its content; the first round is the warm-up."""
    from textual.app import App

    from app.tui.screens.review import ReviewScreen

    class Bench(App[None]):
        pass

    samples: dict[str, Samples] = {name: ([], []) for name in cases}
    names = list(cases)
    app = Bench()
    async with app.run_test(size=SIZE) as pilot:
        for attempt in range(runs + 1):
            shift = attempt % len(names)
            for name in names[shift:] + names[:shift]:
                drawn = asyncio.Event()
                cpu, start = cpu_now(), time.perf_counter()
                screen = cases[name]()
                await app.push_screen(screen)
                if isinstance(screen, ReviewScreen):
                    while screen.reads == 0:
                        await asyncio.sleep(0.001)
                app.call_after_refresh(drawn.set)
                await drawn.wait()
                elapsed, used = time.perf_counter() - start, cpu_now() - cpu
                if attempt:
                    samples[name][0].append(elapsed)
                    samples[name][1].append(used)
                await app.pop_screen()
                await pilot.pause()
                await wait_workers(app)
    return samples


async def wait_workers(app: App[None]) -> None:
    """Let the outlook worker of a closed screen finish before the next round."""
    while any(not w.is_finished for w in app.workers):
        await asyncio.sleep(0.005)


def row(name: str, samples: Samples, yardstick: Samples, note: str = "") -> str:
    walls, cpus = samples
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    p90 = sorted(walls)[max(0, int(len(walls) * 0.9) - 1)]
    wall_ratio = wall / statistics.median(yardstick[0])
    cpu_ratio = cpu / max(statistics.median(yardstick[1]), 1e-9)
    return (
        f"{name:<44} {wall * 1000:>8.1f} {p90 * 1000:>8.1f} {wall_ratio:>7.2f}x"
        f" {cpu * 1000:>8.1f} {cpu_ratio:>7.2f}x  {note}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    os.environ.update(GIT_ENV)
    with tempfile.TemporaryDirectory(prefix="orchestrate-bench-review-") as scratch:
        os.environ["GIT_CONFIG_GLOBAL"] = str(Path(scratch) / "no-gitconfig")
        state_dir, (job_id, small_id), tree = build(Path(scratch), args.lines, args.files)

        from textual.screen import Screen

        from app.git.diff import DIFF_OPTIONS
        from app.review.diffs import read_review_diff
        from app.review.flow import ReviewFlow
        from app.review.outlook import Outlook
        from app.review.service import ReviewRead, ReviewService
        from app.settings import Settings
        from app.tui.screens.review import ReviewScreen

        flow = ReviewFlow(Settings(state_dir=state_dir))
        review = flow.reviews.get(job_id)
        found = read_review_diff(review)
        merge_base = found.merge_base
        patch_lines = found.diff.patch.count(b"\n")

        def git(*argv: str) -> bytes:
            return subprocess.run(["git", *argv], cwd=tree, capture_output=True, check=True).stdout

        def by_hand() -> None:
            start = git("merge-base", "main", "HEAD").decode().strip()
            git("diff", start)
            git("status", "--porcelain")
            git("log", "--oneline", "main..HEAD")

        cli_env = {**os.environ, "ORCHESTRATE_HOME": str(state_dir)}

        def cli(*argv: str) -> Callable[[], object]:
            return lambda: subprocess.run(
                [sys.executable, "-m", "app", *argv], capture_output=True, check=True, env=cli_env
            )

        reads = interleaved(
            {
                "git": lambda: git("diff", merge_base),
                "by hand": by_hand,
                "ours": lambda: git(
                    "diff", "-z", "--raw", "--patch", *DIFF_OPTIONS, "--merge-base", "main", "--"
                ),
                "in process": lambda: read_review_diff(review),
            },
            args.runs,
        )
        clis = interleaved(
            {"review show": cli("review", "show", job_id), "version": cli("--version")},
            max(3, args.runs // 3),
        )

        class DiffOnly(ReviewService):
            """The screen's diff alone: the merge outlook, which it asks for once the
            diff is drawn (every live job's tree snapshotted and merged), would
            otherwise run on the other core during the timed frame."""

            def outlook(self, job_id: str) -> Outlook | None:
                return None

        service = DiffOnly(lambda: ReviewFlow(Settings(state_dir=state_dir)))
        service.flow.reviews.get(job_id)  # the registry open, as in a running control room
        small_read = service.read(small_id)

        class ReadBefore(DiffOnly):
            """The 2-line review, read once beforehand: the screen without git."""

            def read(self, job_id: str) -> ReviewRead:
                return small_read

        instant = ReadBefore(lambda: service.flow)
        screens = asyncio.run(
            screen_open(
                {
                    "review": lambda: ReviewScreen(service, job_id),
                    "small": lambda: ReviewScreen(service, small_id),
                    "floor": lambda: ReviewScreen(instant, small_id),
                    "empty": lambda: Screen(),
                },
                args.runs,
            )
        )

    print(f"\nreview of a {patch_lines:,}-line diff ({len(found.diff.files)} files, "
          f"last one uncommitted); medians of {args.runs} runs\n")  # fmt: skip
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores: wall times grow with it, CPU less")
    print(f"{'case':<46} {'wall ms':>8} {'p90 ms':>8} {'vs git':>8} {'cpu ms':>8} {'vs git':>8}")
    yardstick = reads["git"]
    rows = [
        ("git diff <merge-base> (in the work tree)", reads["git"], "the yardstick"),
        ("by hand: merge-base, diff, status, log", reads["by hand"], "the same facts"),
        ("git diff -z --raw --patch --merge-base", reads["ours"], "our one git diff"),
        ("review show, in process (read_review_diff)", reads["in process"], "goal <= 1.5x"),
        ("orchestrate review show (whole CLI process)", clis["review show"], "Python included"),
        ("  orchestrate --version", clis["version"], "its start alone"),
        ("Review screen: push -> diff drawn", screens["review"], "goal <= 1.5x"),
        ("  same, on a 2-line diff", screens["small"], "what the size costs"),
        ("  same screen, 2 lines read beforehand", screens["floor"], "the screen's floor"),
        ("  empty screen: push -> drawn", screens["empty"], "Textual's own floor"),
    ]
    for name, samples, note in rows:
        print(row(name, samples, yardstick, note))


if __name__ == "__main__":
    main()
