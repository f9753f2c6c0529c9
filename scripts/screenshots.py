"""Regenerate the README's control-room screenshots (SVG) into screenshots/.

Usage: .venv/bin/python -m scripts.screenshots [OUT_DIR]   (from the checkout: it
borrows the History and Review screens' fixtures from tests/)

The screens show real state: a temporary state directory filled through the
registry (jobs registered, events recorded, sessions created, heartbeats
written) and a private tmux server holding the live sessions. The registry's
clock and job ids are pinned while the state is built, so reruns give the
same files.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from textual.pilot import Pilot
from textual.widgets import LoadingIndicator

from app.settings import Settings
from app.tmux.driver import TmuxDriver
from app.tmux.names import session_name_for
from app.tmux.panes import JOB_OPTION
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from app.tui.screens.attach_hint import AttachHintScreen
from bus import heartbeats
from registry.events import build_event
from registry.jobs import Registry
from registry.sessions import SessionStore

ROOT = Path(__file__).resolve().parent.parent
SIZE = (120, 40)
WAITING_JOB = "00000002"  # beta's job, asking about pyproject.toml (ids are pinned)
START = datetime(2025, 1, 15, 11, 30, 0, tzinfo=UTC)
STEP_MS = 4_000  # every registry timestamp is 4 s after the previous one
SOCKET = "orchestrate-screenshots"
SESSIONS = [("alpha", "claude"), ("beta", "codex"), ("gamma", "aider"), ("delta", "claude")]
HEARTBEAT_AGES_S = {"alpha": 3, "beta": 42, "gamma": 130, "delta": 600}
PANE_LOG = [
    "demo agent: job 00000001, 6 steps",
    "task: make the flaky integration tests pass",
    "reading src/registry/jobs.py ...",
    "  step 1/6 done (42 lines touched)",
    "running pytest tests/registry -q ...",
    "  step 2/6 done (17 lines touched)",
    "editing tests/integration/test_submit.py ...",
    "  step 3/6 done (88 lines touched)",
]


class PinnedClock:
    """Stands in for `now_ms` while the state is built: a fixed start, fixed steps."""

    def __init__(self) -> None:
        self.ms = int(START.timestamp() * 1000)

    def __call__(self) -> int:
        self.ms += STEP_MS
        return self.ms


@contextmanager
def pinned(clock: PinnedClock) -> Iterator[None]:
    """Pin the registry's clock and job ids (module globals, restored after)."""
    import registry.jobstore

    counter = itertools.count(1)
    patched: list[tuple[Any, str, Any]] = []
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith(("bus.", "registry.")) and hasattr(module, "now_ms"):
            patched.append((module, "now_ms", module.now_ms))
            module.now_ms = clock
    fake_secrets = SimpleNamespace(
        token_hex=lambda n: f"{next(counter):0{2 * n}x}",
        token_urlsafe=lambda n: "screenshot-token",
    )
    import registry.jobs

    def stamped_event(*args: Any, **kwargs: Any) -> Any:
        kwargs["now"] = datetime.fromtimestamp(clock() / 1000, UTC)
        return build_event(*args, **kwargs)

    patched.append((registry.jobs, "build_event", registry.jobs.build_event))
    registry.jobs.build_event = stamped_event  # type: ignore[assignment]
    patched.append((registry.jobstore, "secrets", registry.jobstore.secrets))
    registry.jobstore.secrets = fake_secrets  # type: ignore[assignment]
    try:
        yield
    finally:
        for module, attr, value in patched:
            setattr(module, attr, value)


def build_state(state_dir: Path, clock: PinnedClock) -> None:
    """Jobs in every state, a permission prompt, a seq gap, a stopped session."""
    with pinned(clock):
        registry = Registry.open(state_dir)
        sessions = SessionStore(registry.bus)
        for label, agent in SESSIONS:
            sessions.create(label, agent, tmux_session=session_name_for(label))
        plan: list[tuple[str, str, list[tuple[str, str]]]] = [
            (
                "alpha",
                "make the flaky integration tests pass",
                [
                    ("started", "demo agent started"),
                    ("progress", "step 1 of 6: reading repo"),
                    ("progress", "step 3 of 6: running tests 3/12"),
                ],
            ),
            (
                "beta",
                "bump the MQTT client to paho 2.2",
                [
                    ("started", "demo agent started"),
                    ("permission_required", "Allow edit of pyproject.toml?"),
                ],
            ),
            (
                "gamma",
                "document the stop modes",
                [
                    ("started", "demo agent started"),
                    ("progress", "step 1 of 2: README.md"),
                    ("completed", "all tests pass"),
                ],
            ),
            (
                "delta",
                "port the exporter to JSONL",
                [("started", "demo agent started"), ("error", "agent exited with code 1")],
            ),
            ("alpha", "refactor the heartbeat thread", []),
            (
                "beta",
                "index the audit log",
                [("started", "demo agent started"), ("progress", "step 2 of 5: indexing")],
            ),
        ]
        job_ids = []
        for label, prompt, events in plan:
            agent = dict(SESSIONS)[label]
            job = registry.register(prompt, agent, label, sign_events=False)
            job_ids.append(job.job_id)
            for event, detail in events:
                registry.publish(job.job_id, event, detail)
        gap_job = job_ids[5]  # two events never arrived: seq 3 and 4
        registry.record_event(build_event(gap_job, 5, "progress", "step 5 of 5: refactor", {}))
        idle = {"activity": "idle", "source": "hook:codex:Stop"}  # its turn is done
        registry.publish(gap_job, "activity", "turn done", idle)
        registry.cancel(job_ids[4])
        sessions.stop("delta", "graceful")
        now = clock.ms
        for label, age_s in HEARTBEAT_AGES_S.items():
            heartbeats.write(
                registry.db.conn, label, "working", current_task=None, ts_ms=now - age_s * 1000
            )
        log = state_dir / "logs" / job_ids[0] / "pane.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("\n".join(PANE_LOG) + "\n", encoding="utf-8")
        registry.db.close()


async def settle(pilot: Pilot[None], ready: Callable[[], bool]) -> None:
    for _ in range(200):
        if ready():
            break
        await pilot.pause(0.05)
    await pilot.pause(0.3)


async def shoot(name: str, keys: tuple[str, ...], state_dir: Path, now_ms: int, out: Path) -> Path:
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    source = RegistrySource(Settings(state_dir), tmux_socket=SOCKET, clock_ms=lambda: now_ms)
    app = ControlRoomApp(source, clock=lambda: now, age_refresh_s=3600, reconcile_interval_s=None)
    async with app.run_test(size=SIZE) as pilot:
        sessions = app.main.query_one("#sessions")
        events = app.main.query_one("#events")
        await settle(pilot, lambda: app.polls_applied > 0 and sessions.row_count > 0)  # type: ignore[attr-defined]
        for _ in range(2):  # twice: a late line can move the end after the first settle
            await settle(pilot, lambda: 0 < events.max_scroll_y == events.scroll_y)
            await pilot.pause(0.3)
        await pilot.press(*keys)
        if name == "attach_hint":  # enter finds the job's pane first (a worker), then asks
            await settle(pilot, lambda: isinstance(app.screen, AttachHintScreen))
        if name == "job_detail":
            tail = app.screen.query_one("#detail-tail")
            await settle(pilot, lambda: tail.line_count >= len(PANE_LOG))  # type: ignore[attr-defined]
        await settle(pilot, lambda: getattr(app.screen, "detail", True) is not None)
        await settle(  # the Review screen: its diff and its merge outlook
            pilot,
            lambda: (
                getattr(app.screen, "reads", 1) > 0
                and getattr(app.screen, "outlook", True) is not None
            ),
        )
        await settle(pilot, lambda: not app.screen.query(LoadingIndicator))  # history loading
        if name == "history":
            charts = app.screen.query("HistoryChart")
            await settle(pilot, lambda: all(c.draws for c in charts))  # type: ignore[attr-defined]
        app.clear_notifications()
        await pilot.pause(0.1)
        return Path(app.save_screenshot(filename=f"{name}.svg", path=str(out)))


# git as the review repository's builder sees it: no user or system config, fixed dates,
# so its commits (and their ids on the screen) are the same on every run.
REVIEW_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Dana Reviewer",
    "GIT_AUTHOR_EMAIL": "dana@example.com",
    "GIT_COMMITTER_NAME": "Dana Reviewer",
    "GIT_COMMITTER_EMAIL": "dana@example.com",
    "GIT_AUTHOR_DATE": "2025-01-15T11:00:00+00:00",
    "GIT_COMMITTER_DATE": "2025-01-15T11:00:00+00:00",
}


def build_review(scratch: Path) -> tuple[Path, int]:
    """A repository with two agents' work up for review; (state dir, the pinned now)."""
    from tests.review.review_fixture import build_review_state

    os.environ.update(REVIEW_GIT_ENV, GIT_CONFIG_GLOBAL=str(scratch / "no-gitconfig"))
    state_dir = scratch / "review-state"
    clock = PinnedClock()
    with pinned(clock):
        build_review_state(state_dir, scratch / "shop")
    return state_dir, clock.ms


async def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    driver = TmuxDriver(SOCKET)
    with tempfile.TemporaryDirectory() as scratch:
        state_dir = Path(scratch) / "state"
        clock = PinnedClock()
        build_state(state_dir, clock)
        # Two days of hourly aggregates as `history build` writes them (no Spark needed).
        from tests.tui.history.history_fixture import write_history

        write_history(state_dir)
        for label, _ in SESSIONS[:3]:  # delta was stopped: its tmux session is gone
            driver.ensure_session(label)
        # beta's pane is its waiting job's: enter finds it, and shows the way back
        beta = session_name_for("beta")
        subprocess.run(
            ["tmux", "-L", SOCKET, "set-option", "-p", "-t", beta, JOB_OPTION, WAITING_JOB],
            check=True,
        )
        try:
            shots = {
                "main": (),
                "job_detail": ("down", "d"),  # job 1, below the one waiting for y/N
                "attach_hint": ("enter",),  # on the job waiting for y/N, at the top
                "help": ("question_mark",),
                "cancel_confirm": ("c",),
                "history": ("h",),
                "inbox": ("w",),  # the permission inbox: beta's job asks about pyproject.toml
            }
            for name, keys in shots.items():
                print(await shoot(name, keys, state_dir, clock.ms, out_dir))
            review_state, review_now = build_review(Path(scratch))
            # the newest job is on top; the one below changed more (and left work uncommitted)
            print(await shoot("review", ("down", "v"), review_state, review_now, out_dir))
        finally:
            subprocess.run(["tmux", "-L", SOCKET, "kill-server"], check=False, capture_output=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots"))
