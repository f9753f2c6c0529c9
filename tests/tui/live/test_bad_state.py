"""The control room over broken state: each problem becomes a notice, the app keeps running."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from app.tui.screens.help import HelpScreen
from app.tui.screens.job_detail import JobDetailScreen
from bus.mqtt_config import BrokerConfig
from registry.ingest import IngestBridge
from registry.jobs import Registry
from registry.mqtt_source import ClientIdLock
from registry.sessions import SessionStore
from tests.tui.live.live_helpers import jobs_table, select_job, wait_notice, wait_until

SIZE = (120, 40)
MakeApp = Callable[..., ControlRoomApp]


async def still_responds(pilot: Pilot[object], app: ControlRoomApp) -> None:
    """The app still takes keys: `?` opens help and `esc` closes it."""
    await pilot.press("question_mark")
    await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
    await pilot.press("escape")
    await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen), "help closed")


async def test_corrupt_database_is_a_notice(
    state_dir: Path, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state.db that is not a database: a clear notice, and the app stays usable."""
    state_dir.mkdir(parents=True)
    garbage = b"this is not sqlite " * 500
    (state_dir / "state.db").write_bytes(garbage)
    app = make_app()
    polls: list[int] = []
    poll = app.source.poll

    def counted_poll(cursor: int) -> object:
        polls.append(cursor)
        return poll(cursor)

    monkeypatch.setattr(app.source, "poll", counted_poll)
    # the row names the full path, which is longer under xdist (.../popen-gw1/...)
    wide = (max(SIZE[0], len(str(state_dir)) + 80), SIZE[1])
    async with app.run_test(size=wide) as pilot:
        notice = await wait_notice(pilot, app, "not an orchestrate database")
        assert "state.db" in notice
        await still_responds(pilot, app)
        # the start and several polls have met the problem (counted, not a fixed pause);
        # each poll's failure is posted before the next poll, then handled here
        await wait_until(pilot, lambda: len(polls) >= 4, "several polls")
        await pilot.pause()
        said = [n.message for n in app._notifications if "not an orchestrate" in n.message]
        assert len(said) == 1, said  # one notice, not one from the start and one from the poll
        # and it stays on screen after the notice fades: never an empty, healthy registry
        assert "registry unreadable" in str(app.main.query_one("#header").render())
        table = jobs_table(app)
        assert table.border_subtitle == "registry unreadable"
        assert "not an orchestrate database" in table.render_line(2).text
    assert (state_dir / "state.db").read_bytes() == garbage  # nothing was written over it


async def test_newer_schema_is_refused_untouched(
    state_dir: Path, registry: Registry, make_app: MakeApp
) -> None:
    """A database from a newer orchestrate is refused with a notice, not migrated."""
    registry.db.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    registry.db.close()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_notice(pilot, app, "upgrade orchestrate")
        await still_responds(pilot, app)
    conn = sqlite3.connect(state_dir / "state.db")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "99"


async def test_locked_database_then_recovers(
    state_dir: Path, registry: Registry, make_app: MakeApp
) -> None:
    """Another process holding an exclusive lock: a notice; once it lets go, rows appear."""
    job = registry.register("locked out", "claude", "alpha")
    registry.db.close()
    holder = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE jobs SET prompt = prompt")
    app = make_app(settings=Settings(state_dir, busy_timeout_ms=100))
    async with app.run_test(size=SIZE) as pilot:
        await wait_notice(pilot, app, "locked")
        await still_responds(pilot, app)
        holder.execute("COMMIT")
        holder.close()
        table = jobs_table(app)
        await wait_until(pilot, lambda: job.job_id in table.rows, "the job once unlocked")


async def test_tmux_missing_is_a_notice(
    registry: Registry, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No tmux on PATH: sessions still listed (tmux gone), one notice says why."""
    SessionStore(registry.bus).create("alpha", "claude", tmux_session="alpha")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_notice(pilot, app, "tmux is not installed")
        sessions = app.main.query_one("#sessions")
        await wait_until(pilot, lambda: sessions.row_count == 1, "the alpha session row")  # type: ignore[attr-defined]
        assert str(sessions.get_cell("alpha", "tmux")) == "gone"  # type: ignore[attr-defined]
        await still_responds(pilot, app)


async def test_job_deleted_while_detail_open(registry: Registry, make_app: MakeApp) -> None:
    """Deleting the job under an open detail screen says so and keeps the last state."""
    job = registry.register("soon gone", "claude", "alpha")
    registry.publish(job.job_id, "started", "on it")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await select_job(pilot, app, job.job_id)
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, JobDetailScreen)
        await wait_until(pilot, lambda: screen.detail is not None, "the detail")
        registry.db.conn.execute("DELETE FROM jobs WHERE job_id = ?", (job.job_id,))
        await wait_notice(pilot, app, f"Job {job.job_id} was deleted")
        assert screen.gone and screen.query_one("#gone").has_class("-shown")
        assert screen.detail is not None and screen.detail.job_id == job.job_id
        await pilot.press("escape")
        await still_responds(pilot, app)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_unreachable_broker_shows_reconnecting(
    state_dir: Path, registry: Registry, make_app: MakeApp, tmux_socket: str
) -> None:
    """A configured broker nobody listens on: header says reconnecting, one notice,
    and the SQLite bus keeps the control room live."""
    bridge = IngestBridge(state_dir, BrokerConfig("127.0.0.1", free_port()), reconnect_max_s=1)
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, bridge=bridge)
    app = make_app(source=source)
    async with app.run_test(size=SIZE) as pilot:
        await wait_notice(pilot, app, "MQTT broker unreachable")
        assert app.main.snapshot.broker_state == "reconnecting"
        job = registry.register("still live", "claude", "alpha")
        await wait_until(pilot, lambda: job.job_id in jobs_table(app).rows, "the new job")


async def test_a_second_control_room_waits_to_ingest(
    state_dir: Path, make_app: MakeApp, tmux_socket: str
) -> None:
    """Another control room already ingests this state dir's MQTT events (it holds the
    bridge's client id): this one says so, shows standby, and takes over once free."""
    bridge = IngestBridge(state_dir, BrokerConfig("127.0.0.1", free_port()), reconnect_max_s=1)
    first = ClientIdLock(bridge.client_id)
    assert first.acquire()
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, bridge=bridge)
    app = make_app(source=source)
    async with app.run_test(size=SIZE) as pilot:
        await wait_notice(pilot, app, "Another control room on this state dir ingests")
        assert app.main.snapshot.broker_state == "standby"
        first.release()
        await wait_until(
            pilot, lambda: app.main.snapshot.broker_state == "reconnecting", "the take-over"
        )
