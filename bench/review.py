"""Benchmark the review path on a 10,000-line diff against `git diff` itself.

Run:  .venv/bin/python bench/review.py [--lines 10000] [--files 20] [--runs 15]

State: a fresh repository in a temp dir; a job with its own work tree (as
`submit --worktree` makes it) whose branch changes `--files` Python files, most
of it committed and the last file left uncommitted, `--lines` changed lines in
all. Every case reads the same diff (merge base -> the work tree as it is):

* git diff: `git diff <merge-base>` in the job's work tree, output read through a
  pipe: what a person would type, and the yardstick (goal: review <= 1.5x it).
* review show (in process): `read_review_diff`, what `review show` and the
  Review screen read: a snapshot of the tree through a copy of its index, the
  merge base, one `git diff --raw --numstat --patch` parsed per file, the commits.
* review show (CLI): `orchestrate review show JOB > pipe`, a whole process
  (Python start and imports included).
* Review screen: a headless Textual app (120x40) pushes the Review screen; from
  the push to the first frame drawn with the diff in it (read in a worker, laid
  out with `DiffDocument.build`, only the visible lines rendered). The same on a
  2-line diff shows what the diff's size costs; an empty screen pushed by the
  same app is Textual's own floor.

Wall times grow with the machine's load (shared cores); CPU times (this process
and its git children, from getrusage) much less, so both are shown.

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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "review"))

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
    from git_repos import git, make_repo

    from app.review.flow import ReviewFlow
    from app.review.worktree import plan_worktree, prepare_worktree
    from app.settings import Settings
    from registry.jobs import Registry

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


def timed(function: Callable[[], object], runs: int) -> Samples:
    function()  # warm-up: page cache, imports
    walls, cpus = [], []
    for _ in range(runs):
        cpu, start = cpu_now(), time.perf_counter()
        function()
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_now() - cpu)
    return walls, cpus


async def screen_open(state_dir: Path, job_id: str, runs: int) -> tuple[Samples, Samples]:
    """(Review screen: push -> first frame with the diff, empty screen: push -> frame)."""
    from textual.app import App
    from textual.screen import Screen

    from app.review.flow import ReviewFlow
    from app.review.service import ReviewService
    from app.settings import Settings
    from app.tui.screens.review import ReviewScreen

    service = ReviewService(lambda: ReviewFlow(Settings(state_dir=state_dir)))
    service.flow.reviews.get(job_id)  # open the registry first, as a running control room has

    class Bench(App[None]):
        pass

    review_times: Samples = ([], [])
    empty_times: Samples = ([], [])
    app = Bench()
    async with app.run_test(size=SIZE) as pilot:
        for attempt in range(runs + 1):
            for kind in ("review", "empty"):
                drawn = asyncio.Event()
                cpu, start = cpu_now(), time.perf_counter()
                screen: Screen[None] = (
                    ReviewScreen(service, job_id) if kind == "review" else Screen()
                )
                await app.push_screen(screen)
                if isinstance(screen, ReviewScreen):
                    while screen.reads == 0:
                        await asyncio.sleep(0.001)
                app.call_after_refresh(drawn.set)
                await drawn.wait()
                elapsed, used = time.perf_counter() - start, cpu_now() - cpu
                if attempt:  # the first round is the warm-up
                    walls, cpus = review_times if kind == "review" else empty_times
                    walls.append(elapsed)
                    cpus.append(used)
                await app.pop_screen()
                await pilot.pause()
                await wait_workers(app)
    return review_times, empty_times


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

        from app.git.runner import run_git
        from app.review.diffs import read_review_diff
        from app.review.flow import ReviewFlow
        from app.settings import Settings

        flow = ReviewFlow(Settings(state_dir=state_dir))
        review = flow.reviews.get(job_id)
        found = read_review_diff(review)
        merge_base = found.merge_base
        patch_lines = found.diff.patch.count(b"\n")

        def plain_git_diff() -> object:
            return subprocess.run(
                ["git", "diff", merge_base], cwd=tree, capture_output=True, check=True
            ).stdout

        def our_git_call() -> object:
            return run_git(
                ["diff", "-z", "--raw", "--numstat", "--patch", merge_base, "--"], tree
            ).stdout

        git_plain = timed(plain_git_diff, args.runs)
        yardstick = git_plain
        git_ours = timed(our_git_call, args.runs)
        in_process = timed(lambda: read_review_diff(review), args.runs)
        cli_env = {**os.environ, "ORCHESTRATE_HOME": str(state_dir)}
        cli = timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "app", "review", "show", job_id],
                capture_output=True,
                check=True,
                env=cli_env,
            ),
            max(3, args.runs // 3),
        )
        screen, empty = asyncio.run(screen_open(state_dir, job_id, args.runs))
        small_screen, _ = asyncio.run(screen_open(state_dir, small_id, args.runs))

    print(f"\nreview of a {patch_lines:,}-line diff ({len(found.diff.files)} files, "
          f"last one uncommitted); medians of {args.runs} runs\n")  # fmt: skip
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores: wall times grow with it, CPU less")
    print(f"{'case':<44} {'wall ms':>8} {'p90 ms':>8} {'vs git':>8} {'cpu ms':>8} {'vs git':>8}")
    print(row("git diff <merge-base> (in the work tree)", git_plain, yardstick, "the yardstick"))
    print(row("git diff -z --raw --numstat --patch", git_ours, yardstick, "our one git call"))
    print(row("review show, in process (read_review_diff)", in_process, yardstick, "goal <= 1.5x"))
    print(
        row("orchestrate review show (whole CLI process)", cli, yardstick, "Python start included")
    )
    print(row("Review screen: push -> diff drawn", screen, yardstick, "goal <= 1.5x"))
    print(row("  same, on a 2-line diff", small_screen, yardstick, "what the size costs"))
    print(row("  empty screen: push -> drawn", empty, yardstick, "Textual's own floor"))


if __name__ == "__main__":
    main()
