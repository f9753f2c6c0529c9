"""scripts/screenshots.py builds its state through the real registry; that part runs
here (the rendering is what the snapshot tests cover), so an API change that breaks
the script fails a test instead of waiting for the next person to regenerate."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from registry.jobs import Registry
from registry.sessions import SessionStore

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "screenshots.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_screenshot_state_builds(tmp_path: Path) -> None:
    script = load_script()
    script.build_state(tmp_path, script.PinnedClock())
    registry = Registry.open(tmp_path)
    statuses = sorted(job.status for job in registry.list())
    assert statuses == sorted(
        ["running", "running", "completed", "error", "cancelled", "running"]
    ), statuses
    sessions = {s.label: s.state for s in SessionStore(registry.bus).list()}
    assert set(sessions) == {label for label, _ in script.SESSIONS}
