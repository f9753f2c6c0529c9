"""The bus as parquet segments, the build's default input: the same facts as the JSONL
export, the same aggregates, appended and merged without losing or doubling a fact."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from bus.export import export_jsonl
from registry.history import segments
from registry.history.aggregate_py import facts_of_lines
from registry.history.facts import Fact
from registry.history.schema import HistoryPaths
from registry.history.segments import (
    export_segments,
    facts_table,
    list_segments,
    segments_from_lines,
    write_segment,
)
from registry.jobs import Registry
from tests.history.history_files import MALFORMED, expected, outputs, with_malformed


def segment_facts(paths: HistoryPaths) -> list[Fact]:
    return [Fact(*row.values()) for s in list_segments(paths)
            for row in pq.read_table(s.path).to_pylist()]  # fmt: skip


def test_the_bus_exports_the_facts_its_jsonl_export_holds(tmp_path: Path) -> None:
    """A real registry's bus (jobs registered, events, activity, status moves, a chat),
    exported both ways: the segments hold exactly the facts Python reads from the JSONL
    export; a second export appends nothing, a third only what came after."""
    registry = Registry.open(tmp_path)
    job = registry.register(prompt="p", agent="demo", agent_session="s")
    registry.publish(job.job_id, "started")
    registry.publish(job.job_id, "permission_required", "may I?")
    registry.publish(job.job_id, "progress", "ok", {"pct": 50})
    paths = HistoryPaths(tmp_path)
    first = export_segments(registry.bus, paths)
    assert first.facts == first.messages == 5 and first.malformed == 0
    assert export_segments(registry.bus, paths).messages == 0
    registry.publish(job.job_id, "completed")
    assert export_segments(registry.bus, paths).facts == 2  # the event and its status move
    target = tmp_path / "all.jsonl"
    export_jsonl(registry.bus, target)
    assert segment_facts(paths) == facts_of_lines(target.read_text().splitlines())
    assert [f.activity for f in segment_facts(paths)][:4] == [None, "working", None, "waiting"]


def test_leftovers_of_an_interrupted_merge_are_dropped(tmp_path: Path) -> None:
    """A merged segment was renamed in but its parts not yet removed: listing removes
    the parts, so no fact is read twice."""
    paths = HistoryPaths(tmp_path)
    lines = [json.dumps({"seq": n, "ts_ms": n, "type": "control.started"}) for n in range(1, 7)]
    facts = facts_of_lines(lines)
    for part in (facts[:2], facts[2:4]):
        write_segment(paths, facts_table(part), part[0].seq, part[-1].seq, 0)
    write_segment(paths, facts_table(facts[:4]), 1, 4, 0)  # the merge of both
    write_segment(paths, facts_table(facts[4:]), 5, 6, 0)
    assert [(s.first_seq, s.last_seq) for s in list_segments(paths)] == [(1, 4), (5, 6)]
    assert len(list(paths.segments.glob("*.parquet"))) == 2
    assert segment_facts(paths) == facts


@pytest.mark.spark
def test_segments_build_what_the_jsonl_builds(
    spark: Any, built: Path, events: list[str], tmp_path: Path
) -> None:
    """The suite's traffic as segments (malformed lines counted by the export): the
    build's outputs equal those of the JSONL build and the reference."""
    from registry.history.spark_job import run_build

    state_dir = tmp_path / "state"
    segments_from_lines(HistoryPaths(state_dir), with_malformed(events), per_segment=2500)
    report = run_build(spark, state_dir)
    assert report.full and report.malformed == len(MALFORMED)
    assert outputs(state_dir) == outputs(built) == expected(events, state_dir)


@pytest.mark.spark
def test_segments_appended_and_merged_build_exactly(
    spark: Any, events: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Builds that each find one new segment end where one full build does; once more
    segments than COMPACT_AT are there, the small ones are merged after a build and
    the next incremental build is still exact."""
    from registry.history.spark_job import run_build

    monkeypatch.setattr(segments, "COMPACT_AT", 2)
    state_dir = tmp_path / "state"
    paths = HistoryPaths(state_dir)
    facts = facts_of_lines(events)
    cuts = [0, 2000, 3000, 3500, 4800, len(facts)]
    counts = []
    for number, (start, end) in enumerate(itertools.pairwise(cuts)):
        part = facts[start:end]
        write_segment(paths, facts_table(part), part[0].seq, part[-1].seq, 0)
        report = run_build(spark, state_dir)
        assert report.full == (number == 0) and report.new_facts == len(part)
        counts.append(len(list_segments(paths)))
    assert counts == [1, 2, 1, 2, 1]  # three files merged into one, twice
    incremental = outputs(state_dir)
    assert incremental == expected(events, state_dir)
    run_build(spark, state_dir, full=True)
    assert outputs(state_dir) == incremental
