"""The Review screen (`v` on a job): Pilot tests against real git repos, a real registry
and, for request-changes, a real agent in a pane on a private tmux server."""

from __future__ import annotations

import dataclasses
import html
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, TextArea

from app.review.finished import work_finished
from app.review.worktree import plan_worktree
from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from app.tui.screens.confirm import ConfirmScreen
from app.tui.screens.review import ReviewScreen
from app.tui.widgets.diff_view import DiffView
from app.tui.widgets.header_bar import HeaderBar
from app.tui.widgets.jobs_table import JobsTable
from app.tui.widgets.review_files import ReviewFiles
from registry.jobs import Registry
from registry.review import ReviewStore
from tests.polling import poll_until
from tests.review.git_repos import commit_file, finish_job, git, start_job
from tests.tui.tui_helpers import loaded, notices, wait_until

SIZE = (120, 40)
NOW = datetime(2025, 1, 15, 12, 0, tzinfo=UTC)


def make_app(settings: Settings, tmux_socket: str) -> ControlRoomApp:
    source = RegistrySource(settings, tmux_socket=tmux_socket)
    return ControlRoomApp(
        source,
        clock=lambda: NOW,
        poll_interval_s=0.05,
        age_refresh_s=3600,
        reconcile_interval_s=None,
        history_read_ahead_s=None,
        history_recheck_s=None,
    )


async def open_review(pilot: Any, job_id: str) -> ReviewScreen:
    """Select the job's row, press v, and wait for its diff and outlook."""
    app = pilot.app
    await loaded(pilot)
    table = app.main.query_one("#jobs", JobsTable)
    await wait_until(pilot, lambda: job_id in table.rows, f"job {job_id} in the table")
    table.move_cursor(row=table.get_row_index(job_id))
    await pilot.press("v")
    await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the Review screen")
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    await wait_until(pilot, lambda: screen.reads > 0 and screen.outlook is not None, "the diff")
    await pilot.pause()
    return screen


def screen_text(app: ControlRoomApp) -> str:
    """What the screen shows, as text (the SVG screenshot's text runs, joined)."""
    runs = re.findall(r">([^<]*)</text>", app.export_screenshot())
    return html.unescape("".join(runs)).replace("\xa0", " ")


async def test_v_opens_the_diff_with_files_counts_and_the_in_review_count(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    job_id, tree = start_job(settings, repo, "add a helper")
    long_app = "".join(f"# line {n}\n" for n in range(60))
    commit_file(tree, "src/helper.py", "def helper():\n    return 42\n" + long_app, "add helper")
    (tree / "src/app.py").write_text(long_app)  # left uncommitted, long: the diff scrolls
    finish_job(settings, job_id)
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        header = app.main.query_one(HeaderBar)
        await wait_until(pilot, lambda: header.snapshot.in_review == 1, "in review 1")
        assert "in review 1" in str(header.render())
        screen = await open_review(pilot, job_id)
        files = screen.query_one(ReviewFiles)
        rows = [[str(cell) for cell in files.get_row_at(i)] for i in range(files.row_count)]
        assert rows == [
            ["M", "src/app.py", "+60", "\u22122"],
            ["A", "src/helper.py", "+62", "\u22120"],
        ]
        diff = screen.query_one(DiffView)
        assert diff.document.paths == ("src/app.py", "src/helper.py")
        assert "+    return 42" in diff.document.lines
        text = screen_text(app)
        assert "IN_REVIEW" in text and "uncommitted work included" in text
        assert "merges cleanly into main" in text
        await pilot.press("tab")  # to the file list: its cursor moves the diff
        assert files.has_focus
        files.move_cursor(row=1)
        await pilot.pause()
        assert diff.scroll_y == diff.document.starts[1] and diff.top_file == 1


async def test_the_jobs_table_and_a_notice_say_which_jobs_wait_for_review(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    """A round brought up by another process (the background supervisor) marks the
    job's row and is announced once by the control room's next pass."""
    job_id, tree = start_job(settings, repo)
    commit_file(tree, "a.txt", "a\n")
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        table = app.main.query_one("#jobs", JobsTable)
        await wait_until(pilot, lambda: job_id in table.rows, f"job {job_id} in the table")
        source = app.source
        assert isinstance(source, RegistrySource)
        assert "Ready for review" not in (source.reconcile() or "")
        store = ReviewStore(Registry.open(settings.state_dir).bus)
        assert work_finished(store, job_id, "agent went idle after its task") is not None

        def progress() -> str:
            return str(table.get_cell(job_id, "progress"))

        await wait_until(pilot, lambda: progress() == "in review: press v", "the row marked")
        await wait_until(
            pilot,
            lambda: re.search(r"review +WORKING → IN_REV", screen_text(app)) is not None,
            "the review's move in the event stream",
        )
        assert f"Ready for review (v): {job_id}" in (source.reconcile() or "")
        assert "Ready for review" not in (source.reconcile() or "")  # said once


async def test_approve_asks_first_with_cancel_as_the_default(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    job_id, tree = start_job(settings, repo, "edit", base="main")
    commit_file(tree, "src/app.py", "def main():\n    return 3\n")
    finish_job(settings, job_id)
    before = git(repo, "rev-parse", "main")
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, job_id)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        assert app.screen.focused is not None and app.screen.focused.id == "cancel"
        await pilot.press("enter")  # Cancel
        await wait_until(pilot, lambda: app.screen is screen, "back on the Review screen")
        assert git(repo, "rev-parse", "main") == before
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: any("Merged job" in n for n in notices(app)), "merged")
        await wait_until(
            pilot,
            lambda: screen.loaded is not None and screen.loaded.review.state == "COMPLETED",
            "the screen reloaded",
        )
    assert git(repo, "show", "main:src/app.py") == "def main():\n    return 3"


async def test_the_screen_follows_its_review_and_keeps_the_readers_place(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    """Opened while the agent works, the screen reads again by itself when the round
    ends (the diff then holds the agent's last edits), without losing the reader's
    place; another job merging into the base brings a fresh merge outlook."""
    job_id, tree = start_job(settings, repo, "a long edit")
    body = "".join(f"line_{n} = {n}\n" for n in range(200))
    (tree / "src/long.py").write_text(body)
    other_id, other_tree = start_job(settings, repo, "the same file")
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        app.animation_level = "none"
        screen = await open_review(pilot, job_id)
        assert screen.loaded is not None and screen.loaded.review.state == "WORKING"
        assert screen.outlook is not None and screen.outlook.clean
        diff = screen.query_one(DiffView)
        diff.scroll_to(0, 120, animate=False)
        await pilot.pause()
        (tree / "src/long.py").write_text(body + "last = True\n")  # the agent's last edit
        finish_job(settings, job_id)
        await wait_until(
            pilot,
            lambda: screen.loaded is not None and screen.loaded.review.state == "IN_REVIEW",
            "the screen to follow its review",
        )
        await pilot.pause()
        assert "+last = True" in diff.document.lines
        assert diff.scroll_y == 120  # where the reader was
        commit_file(other_tree, "src/long.py", "other\n", "other job")
        commit_file(repo, "src/long.py", "main's own\n", "someone else on main")
        finish_job(settings, other_id)  # a review moved: the base may have too
        await wait_until(
            pilot,
            lambda: screen.outlook is not None and screen.outlook.clean is False,
            "a fresh outlook: it no longer merges",
        )


async def test_a_conflict_is_shown_and_nothing_is_merged(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    job_id, tree = start_job(settings, repo, "edit", base="main")
    commit_file(tree, "src/app.py", "job\n")
    finish_job(settings, job_id)
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "src/app.py", "base\n")
    before = git(repo, "rev-parse", "main")
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        await open_review(pilot, job_id)
        assert "conflicts with main in src/app.py" in screen_text(app)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: any("does not merge" in n for n in notices(app)), "told")
        await wait_until(
            pilot, lambda: "last merge conflicted" in screen_text(app), "the conflict shown"
        )
    assert git(repo, "rev-parse", "main") == before
    assert ReviewStore(Registry.open(settings.state_dir).bus).get(job_id).state == "APPROVED"


async def test_discard_confirmed_removes_the_branch_and_leaves_the_screen(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    job_id, tree = start_job(settings, repo)
    finish_job(settings, job_id)
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        await open_review(pilot, job_id)
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: app.screen is app.main, "back to the main screen")
    assert git(repo, "branch", "--list", f"orchestrate/{job_id}") == "" and not tree.exists()


async def test_v_on_a_job_without_a_work_tree_says_so(settings: Settings, tmux_socket: str) -> None:
    job = Registry.open(settings.state_dir).register("plain", "demo", "s", sign_events=False)
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("v")
        await wait_until(
            pilot, lambda: any("did not run in a work tree" in n for n in notices(app)), "told"
        )
        await wait_until(pilot, lambda: app.screen is app.main, "still on the main screen")
    assert job.job_id


async def test_hostile_names_and_content_are_shown_as_text(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    """A file named like markup, and content with escape sequences, reach the screen as
    visible characters: no style applied, no escape sequence passed to the terminal."""
    job_id, tree = start_job(settings, repo)
    (tree / "[bold red]alert.txt").write_text("\x1b]0;pwned\x07\x1b[31mred\x1b[0m\n")
    finish_job(settings, job_id)
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, job_id)
        files = screen.query_one(ReviewFiles)
        assert str(files.get_row_at(0)[1]) == "[bold red]alert.txt"
        diff = screen.query_one(DiffView)
        added = [line for line in diff.document.lines if line.startswith("+\u241b")]
        assert added == ["+\u241b]0;pwned\u2407\u241b[31mred\u241b[0m"]
        assert "\x1b" not in "".join(diff.document.lines)
        assert "[bold red]alert.txt" in screen_text(app)


async def test_a_ten_thousand_line_diff_opens_and_scrolls_to_its_end(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    job_id, tree = start_job(settings, repo)
    body = "".join(f"value_{n} = {n}  # line {n}\n" for n in range(10_000))
    (tree / "src/big.py").write_text(body)
    finish_job(settings, job_id)
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        app.animation_level = "none"  # end jumps: no frames drawn on the way down
        screen = await open_review(pilot, job_id)
        diff = screen.query_one(DiffView)
        assert len(diff.document.lines) > 10_000
        await pilot.press("end")
        await wait_until(pilot, lambda: diff.scroll_y == diff.max_scroll_y > 9_000, "the end")
        await pilot.pause()
        assert "value_9999 = 9999" in screen_text(app)
        assert diff._cache.misses < 200  # only the lines that came on screen were rendered


async def test_request_changes_pastes_the_text_into_the_agents_pane(
    settings: Settings, repo: Path, tmux_socket: str, rounds_agent: str
) -> None:
    """x, a text box, Send, then a confirmation that shows the text: it reaches the
    agent and the job is WORKING again."""
    from app.control import Orchestrator

    orchestrator = Orchestrator(settings, tmux_socket=tmux_socket)
    job = orchestrator.submit(
        "write src/app.py changed", rounds_agent, "reviewers", worktree=plan_worktree(repo)
    )
    registry = Registry.open(settings.state_dir)
    store = ReviewStore(registry.bus)
    poll_until(lambda: store.get(job.job_id).state == "IN_REVIEW", what="the agent's work")
    tree = Path(store.get(job.job_id).worktree)
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, job.job_id)
        await wait_until(pilot, lambda: screen.loaded is not None, "read")
        await pilot.press("x")
        await wait_until(pilot, lambda: bool(app.screen.query(TextArea)), "the text box")
        app.screen.query_one(TextArea).insert("use a constant;\nand add a test")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        assert app.screen.query_one("#cancel", Button).has_focus
        assert "use a constant;" in screen_text(app)  # what is about to be sent
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: any("Sent the changes" in n for n in notices(app)), "sent")
    inbox = tree / ".agent-inbox"
    poll_until(
        lambda: inbox.exists() and inbox.read_text() == "use a constant;\nand add a test\n",
        what="the pasted text in the agent",
    )
    assert store.get(job.job_id).state in ("WORKING", "IN_REVIEW")  # its next round may be done
    assert "changes requested: use a constant;" in store.why(job.job_id)


def test_a_new_job_from_the_control_room_gets_a_work_tree_with_the_auto_setting(
    settings: Settings,
    repo: Path,
    tmux_socket: str,
    rounds_agent: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`n` in a control room opened in a git repository with ORCHESTRATE_WORKTREE=auto:
    the job runs on its own branch, in its own work tree, as `submit` does."""
    monkeypatch.chdir(repo)
    auto = RegistrySource(dataclasses.replace(settings, worktree="auto"), tmux_socket=tmux_socket)
    job_id = auto.submit("write src/app.py from the control room", rounds_agent, "room")
    review = ReviewStore(Registry.open(settings.state_dir).bus).get(job_id)
    assert review.branch == f"orchestrate/{job_id}" and Path(review.worktree).is_dir()
    plain = RegistrySource(settings, tmux_socket=tmux_socket)
    other = plain.submit("write src/app.py here", rounds_agent, "room")
    assert ReviewStore(Registry.open(settings.state_dir).bus).find(other) is None


async def test_the_job_keys_act_on_the_reviewed_job(
    settings: Settings, repo: Path, tmux_socket: str
) -> None:
    """After `x` its agent may ask before it works: y/N answer it from the Review
    screen; v there opens no second Review screen of the same job."""
    job_id, _ = start_job(settings, repo)
    finish_job(settings, job_id)
    app = make_app(settings, tmux_socket)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, job_id)
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: any(f"job {job_id} is not waiting for an answer" in n for n in notices(app)),
            "the answer tried on the reviewed job",
        )
        await pilot.press("v")
        await pilot.pause()
        assert app.screen is screen and len(app.screen_stack) == 2
