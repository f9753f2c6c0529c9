"""bus.export never cuts a file it did not write: a crash's tail is repaired, anything
else in the target (a person's file, an edited export, another bus's export) is
refused with the file and the export progress untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bus.errors import ExportTargetMismatch
from bus.export import SIZE_KEY, export_jsonl
from bus.messages import Bus, Outgoing


def publish(bus: Bus, *payloads: object) -> None:
    for payload in payloads:
        bus.publish(Outgoing(type="t", from_agent="a", payload=payload))


def payloads(path: Path) -> list[object]:
    return [json.loads(line)["payload"] for line in path.read_text().splitlines()]


def exported_seq(bus: Bus) -> int:
    return int(bus.db.conn.execute("SELECT last_seq FROM export_state").fetchone()[0])


def refused_untouched(bus: Bus, path: Path, match: str) -> None:
    """Exporting to ``path`` is refused; the file and the export progress stay as is."""
    before, seq = path.read_bytes(), exported_seq(bus)
    with pytest.raises(ExportTargetMismatch, match=match):
        export_jsonl(bus, path)
    assert path.read_bytes() == before
    assert exported_seq(bus) == seq


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


def test_each_target_keeps_its_own_size(bus: Bus, tmp_path: Path) -> None:
    """Exporting once elsewhere (--out) does not make the usual target foreign."""
    usual, other = tmp_path / "bus.jsonl", tmp_path / "other.jsonl"
    publish(bus, 1)
    export_jsonl(bus, usual)
    publish(bus, 2)
    export_jsonl(bus, other)
    publish(bus, 3)
    assert export_jsonl(bus, usual) == 1
    assert payloads(usual) == [1, 3] and payloads(other) == [2]


def test_cli_refuses_in_one_line_and_keeps_the_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cli("msg", "send", "a", '{"x": 1}')
    notes = tmp_path / "notes.txt"
    notes.write_text("not an export\n")
    result = cli("export", "--out", str(notes))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "did not export to it" in result.stderr
    assert notes.read_text() == "not an export\n"
