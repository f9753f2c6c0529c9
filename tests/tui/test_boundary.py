"""The TUI's pure parts: delta merging, the burst mailbox, command lookup, lazy import."""

from __future__ import annotations

import ast
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from app.tui.commands import COMMANDS, command_named, commands_starting
from app.tui.mailbox import DeltaMailbox
from app.tui.source import Delta, EventRow, JobRow, Snapshot

T0 = datetime(2025, 1, 15, tzinfo=UTC)


def job(job_id: str, status: str = "running") -> JobRow:
    return JobRow(job_id, status, "claude", "alpha", T0, T0)  # type: ignore[arg-type]


def event(seq: int) -> EventRow:
    return EventRow(seq, T0, "a", "progress")


def test_merge_keeps_the_newest_row_and_all_events() -> None:
    """A burst collapses: latest job row wins, events accumulate, totals are the newest."""
    first = Delta(1, jobs=(job("a", "pending"), job("b")), events=(event(1),))
    second = Delta(2, jobs=(job("a", "running"),), events=(event(2),), snapshot=Snapshot({"x": 1}))
    merged = first.merge(second)
    assert merged.cursor == 2
    assert {row.job_id: row.status for row in merged.jobs} == {"a": "running", "b": "running"}
    assert [e.seq for e in merged.events] == [1, 2]
    assert merged.snapshot.counts == {"x": 1}


def test_merge_removal_then_readd() -> None:
    """A job removed in one delta and not re-added stays removed; a re-add wins."""
    removed = Delta(1, jobs=(job("a"),)).merge(Delta(2, removed_job_ids=("a",)))
    assert removed.jobs == () and removed.removed_job_ids == ("a",)
    readded = removed.merge(Delta(3, jobs=(job("a"),)))
    assert readded.removed_job_ids == () and len(readded.jobs) == 1


def test_merge_keeps_sessions_when_the_newer_delta_has_none() -> None:
    first = Delta(1, sessions=())
    assert first.merge(Delta(2)).sessions == ()


def test_mailbox_rings_once_per_burst() -> None:
    """Only the first put of a burst asks for a doorbell; take empties the box."""
    box = DeltaMailbox()
    assert box.put(Delta(1, events=(event(1),))) is True
    assert box.put(Delta(2, events=(event(2),))) is False
    taken = box.take()
    assert taken is not None and [e.seq for e in taken.events] == [1, 2]
    assert box.take() is None
    assert box.put(Delta(3)) is True


def test_command_names_and_prefixes() -> None:
    assert command_named("cancel") is not None
    assert command_named(":hist").name == "history"  # type: ignore[union-attr]
    assert command_named("re").name == "resume"  # type: ignore[union-attr]
    assert command_named("n") is next(c for c in COMMANDS if c.key == "n")  # its key wins
    assert command_named(":h").name == "history"  # type: ignore[union-attr]  # h: history, not help
    assert command_named("he").name == "help"  # type: ignore[union-attr]
    assert command_named(":S").name == "stop"  # type: ignore[union-attr]  # keys are case-sensitive
    assert commands_starting("hi") == ["history"]
    assert set(commands_starting("h")) == {"history", "help"}
    assert command_named("bogus") is None
    assert len({c.key for c in COMMANDS}) == len(COMMANDS)  # no key bound twice


def test_watch_command_does_not_import_textual() -> None:
    """Other commands import app.cli; `watch` must stay lazy about Textual."""
    code = "import sys, app.cli, app.commands.watch; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _imports_of(path: Path, root: Path) -> set[str]:
    """The `app.*` modules a file imports, at its top or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.startswith("app.") and _module_file(name, root)}


def _module_file(name: str, root: Path) -> Path | None:
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_the_control_room_has_no_import_circle() -> None:
    """No two modules of app/tui import each other, not even lazily inside a function
    (source.py once opened registry_source.py, which imports source.py)."""
    root = Path(__file__).resolve().parents[2]
    modules = {
        ".".join(path.relative_to(root).with_suffix("").parts): path
        for path in (root / "app" / "tui").rglob("*.py")
        if path.name != "__init__.py"
    }
    graph = {name: _imports_of(path, root) & set(modules) for name, path in modules.items()}
    circles = []
    for name, imported in graph.items():
        for other in imported:
            seen, stack = set(), [other]
            while stack:
                current = stack.pop()
                if current == name:
                    circles.append((name, other))
                    break
                if current not in seen:
                    seen.add(current)
                    stack.extend(graph.get(current, ()))
    assert circles == []
