"""Fixtures for control-room tests against real SQLite state and a real tmux server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # importlib mode: make live_helpers importable

from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from registry.jobs import Registry


@pytest.fixture
def tmux_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private tmux socket for this test (also for panes and subprocesses), reaped after."""
    tmux = shutil.which("tmux") or "tmux"  # resolved now: a test may empty PATH
    name = f"orch-tui-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("ORCHESTRATE_TMUX_SOCKET", name)
    yield name
    subprocess.run([tmux, "-L", name, "kill-server"], capture_output=True, check=False)
    base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
    (base / f"tmux-{os.getuid()}" / name).unlink(missing_ok=True)  # tmux leaves it behind


@pytest.fixture
def registry(state_dir: Path) -> Registry:
    return Registry.open(state_dir)


@pytest.fixture
def make_app(state_dir: Path, tmux_socket: str) -> Callable[..., ControlRoomApp]:
    """A control room over the test's state dir and tmux socket, polling fast."""

    def build(
        *, source: RegistrySource | None = None, settings: Settings | None = None, **kwargs: object
    ) -> ControlRoomApp:
        source = source or RegistrySource(settings or Settings(state_dir), tmux_socket=tmux_socket)
        options: dict[str, object] = {"poll_interval_s": 0.05, "reconcile_interval_s": None}
        return ControlRoomApp(source, **(options | kwargs))  # type: ignore[arg-type]

    return build
