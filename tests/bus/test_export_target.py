"""bus.export never cuts a file it did not write: a crash's tail is repaired, anything
else in the target (a person's file, an edited export, another bus's export) is
refused with the file and the export progress untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bus.errors import BusError, ExportTargetMismatch
from bus.export import SEQ_KEY, SIZE_KEY, default_target, export_jsonl
from bus.messages import Bus, Outgoing


def publish(bus: Bus, *payloads: object) -> None:
    for payload in payloads:
        bus.publish(Outgoing(type="t", from_agent="a", payload=payload))


def payloads(path: Path) -> list[object]:
    return [json.loads(line)["payload"] for line in path.read_text().splitlines()]


def progress(bus: Bus) -> list[tuple[str, str]]:
    """Every export's recorded progress: export_state and the per-target records."""
    conn = bus.db.conn
    rows = conn.execute("SELECT key, value FROM meta WHERE key LIKE 'export_%' ORDER BY key")
    state = conn.execute("SELECT last_seq FROM export_state").fetchone()[0]
    return [("export_state", str(state)), *rows.fetchall()]


def refused_untouched(bus: Bus, path: Path, match: str) -> None:
    """Exporting to ``path`` is refused; the file and the export progress stay as is."""
    before, recorded = path.read_bytes(), progress(bus)
    with pytest.raises(ExportTargetMismatch, match=match):
        export_jsonl(bus, path)
    assert path.read_bytes() == before
    assert progress(bus) == recorded


def test_a_file_of_someone_elses_is_refused_not_emptied(bus: Bus, tmp_path: Path) -> None:
    publish(bus, 1, 2)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\nkeep them\n")
    refused_untouched(bus, notes, "did not export to it")


def test_another_buses_export_is_refused_not_trimmed(bus: Bus, tmp_path: Path) -> None:
    """A valid export copied in by hand (seqs this bus never exported): before the
    fix, export_state 0 made every line a 'crash tail' and the file was emptied."""
    publish(bus, 1)
    copied = tmp_path / "bus.jsonl"
    copied.write_text("".join(json.dumps({"seq": s, "payload": s}) + "\n" for s in (1, 2, 3)))
    refused_untouched(bus, copied, "did not export to it")


def test_an_edited_export_is_refused(bus: Bus, tmp_path: Path) -> None:
    out = tmp_path / "bus.jsonl"
    publish(bus, 1, 2)
    export_jsonl(bus, out)
    with out.open("a") as handle:
        handle.write("a line someone added\n")
    publish(bus, 3)
    refused_untouched(bus, out, "changed since the last export")
    out.write_text(out.read_text().replace("a line someone added\n", ""))  # put right
    assert export_jsonl(bus, out) == 1
    assert payloads(out) == [1, 2, 3]


def test_a_crash_tail_is_cut_and_nothing_doubles(bus: Bus, tmp_path: Path) -> None:
    out = tmp_path / "bus.jsonl"
    publish(bus, 1)
    export_jsonl(bus, out)
    publish(bus, 2)
    with out.open("a") as handle:  # appended, then the crash: progress never recorded
        handle.write(json.dumps({"seq": 2, "payload": 2}) + "\n" + '{"seq": 3, "pay')
    assert export_jsonl(bus, out) == 1
    assert payloads(out) == [1, 2]


def test_an_export_from_before_sizes_were_recorded_is_adopted(bus: Bus, tmp_path: Path) -> None:
    """Older releases kept no size: a file that is wholly this export (plus a crash
    tail) is taken over, its tail cut."""
    out = tmp_path / "bus.jsonl"
    publish(bus, 1, 2)
    export_jsonl(bus, out)
    bus.db.conn.execute("DELETE FROM meta WHERE key LIKE ?", (SIZE_KEY + "%",))
    with out.open("a") as handle:
        handle.write(json.dumps({"seq": 9, "payload": "phantom"}) + "\n")
    publish(bus, 3)
    assert export_jsonl(bus, out) == 1
    assert payloads(out) == [1, 2, 3]


def test_a_moved_away_export_starts_a_new_file(bus: Bus, tmp_path: Path) -> None:
    out = tmp_path / "bus.jsonl"
    publish(bus, 1)
    export_jsonl(bus, out)
    out.rename(tmp_path / "bus.1.jsonl")
    publish(bus, 2)
    assert export_jsonl(bus, out) == 1
    assert payloads(out) == [2]
    publish(bus, 3)
    assert export_jsonl(bus, out) == 1
    assert payloads(out) == [2, 3]


def test_each_target_keeps_its_own_progress(bus: Bus, tmp_path: Path) -> None:
    """Exporting elsewhere (--out) neither makes the usual target foreign nor takes
    messages from it: each file gets the whole bus (before, `other` got only [2] and
    the usual export, the history's input, never got 2)."""
    usual, other = default_target(bus), tmp_path / "other.jsonl"
    publish(bus, 1)
    export_jsonl(bus, usual)
    publish(bus, 2)
    export_jsonl(bus, other)
    publish(bus, 3)
    assert export_jsonl(bus, usual) == 2
    assert payloads(usual) == [1, 2, 3] and payloads(other) == [1, 2]
    assert export_jsonl(bus, other) == 1 and payloads(other) == [1, 2, 3]
    assert progress(bus)[0] == ("export_state", "3")  # the usual target's, as SPEC says


def test_an_export_from_before_per_target_progress_goes_on_from_export_state(
    bus: Bus, tmp_path: Path
) -> None:
    """Older releases kept one export_state for every target: their file continues."""
    out = tmp_path / "bus.jsonl"
    publish(bus, 1, 2)
    export_jsonl(bus, out)
    bus.db.conn.execute("DELETE FROM meta WHERE key LIKE ?", (SEQ_KEY + "%",))
    bus.db.conn.execute("UPDATE export_state SET last_seq = 2")
    publish(bus, 3)
    assert export_jsonl(bus, out) == 1
    assert payloads(out) == [1, 2, 3]


def test_concurrent_exports_to_one_file_write_each_message_once(bus: Bus) -> None:
    """`orchestrate export` while `history build` exports: they take turns."""
    publish(bus, *range(3000))
    script = (
        "import sys; from pathlib import Path; from bus.db import BusDB; "
        "from bus.messages import Bus; from bus.export import export_jsonl, default_target; "
        "bus = Bus(BusDB(Path(sys.argv[1]))); export_jsonl(bus, default_target(bus))"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", script, str(bus.db.state_dir)]) for _ in range(4)
    ]
    assert [run.wait(60) for run in runs] == [0, 0, 0, 0]
    assert payloads(default_target(bus)) == list(range(3000))


def test_a_target_that_cannot_be_written_is_one_bus_error(bus: Bus, tmp_path: Path) -> None:
    publish(bus, 1)
    blocker = tmp_path / "a-file"
    blocker.write_text("keep")
    refused = r"cannot export to .*a-file/x\.jsonl: .*a-file is not a directory"
    with pytest.raises(BusError, match=refused):
        export_jsonl(bus, blocker / "x.jsonl")
    assert blocker.read_text() == "keep"


def test_cli_refuses_in_one_line_and_keeps_the_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cli("msg", "send", "a", '{"x": 1}')
    notes = tmp_path / "notes.txt"
    notes.write_text("not an export\n")
    result = cli("export", "--out", str(notes))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "did not export to it" in result.stderr
    assert notes.read_text() == "not an export\n"
