"""How a build plans its JVM (registry.history.jvm) and how much it will read
(watermark.bytes_to_read): pure file-system logic, no JVM started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from registry.history.jvm import (
    C1_ONLY,
    C1_ONLY_BELOW_BYTES,
    archive_path,
    keep_recording,
    plan_jvm,
)
from registry.history.schema import HistoryPaths
from registry.history.watermark import (
    BuildState,
    FileMark,
    bytes_to_read,
    resolve_input,
    save_state,
)


@pytest.fixture
def java_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A JAVA_HOME whose bin/java is a plain file: the archive key comes from it."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(home))
    return home


def test_small_reads_use_c1_only_and_big_or_unknown_ones_do_not(java_home: Path) -> None:
    assert C1_ONLY in plan_jvm(None, 10_000).java_options
    assert C1_ONLY not in plan_jvm(None, C1_ONLY_BELOW_BYTES).java_options
    assert C1_ONLY not in plan_jvm(None, None).java_options  # a remote input
    assert plan_jvm(None, None).java_options == ""


def test_without_an_archive_the_jvm_records_one(java_home: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plan = plan_jvm(cache, 10)
    assert plan.archive is None and plan.target == archive_path(cache)
    assert plan.recording is not None and plan.recording.name.endswith(f".{os.getpid()}.tmp")
    assert f'-XX:ArchiveClassesAtExit="{plan.recording}"' in plan.java_options
    assert "recording a class archive" in plan.describe()


def test_with_an_archive_the_jvm_maps_it(java_home: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache dir"  # a space: the option quotes the path
    archive = archive_path(cache)
    assert archive is not None
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    plan = plan_jvm(cache, 10)
    assert plan.archive == archive and plan.recording is None
    assert f'-XX:SharedArchiveFile="{archive}"' in plan.java_options
    assert str(archive) in plan.describe()


def test_another_java_runtime_gets_another_archive(java_home: Path, tmp_path: Path) -> None:
    before = archive_path(tmp_path)
    (java_home / "bin" / "java").write_text("#!/bin/sh\n# upgraded\n")
    assert archive_path(tmp_path) != before


def test_another_spark_class_path_gets_another_archive(
    java_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JVM maps an archive only on the class path it was recorded with, and Spark
    puts its conf dir on that path: another conf dir must not find this archive."""
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    before = archive_path(tmp_path)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    assert archive_path(tmp_path) != before


def test_no_java_no_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "missing"))
    assert archive_path(tmp_path) is None
    assert plan_jvm(tmp_path, 10).recording is None


def test_an_unusable_cache_dir_means_no_archive(java_home: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache dir would go")
    plan = plan_jvm(blocker / "cache", 10)
    assert plan.recording is None and plan.archive is None
    assert plan.java_options == C1_ONLY and "no class archive" in plan.describe()


def test_a_clean_exit_keeps_the_recording_and_drops_old_archives(
    java_home: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    old = cache / "spark-0000000000000000.jsa"
    old.write_bytes(b"older java")
    plan = plan_jvm(cache, 10)
    assert plan.recording is not None and plan.target is not None
    plan.recording.write_bytes(b"new archive")
    assert keep_recording(plan, 0)
    assert plan.target.read_bytes() == b"new archive"
    assert not plan.recording.exists() and not old.exists()


@pytest.mark.parametrize("exit_code", [1, -9, None])
def test_a_failed_exit_drops_the_half_written_recording(
    java_home: Path, tmp_path: Path, exit_code: int | None
) -> None:
    plan = plan_jvm(tmp_path, 10)
    assert plan.recording is not None and plan.target is not None
    plan.recording.write_bytes(b"half")
    assert not keep_recording(plan, exit_code)
    assert not plan.recording.exists() and not plan.target.exists()


def test_a_recording_the_jvm_never_wrote_is_not_kept(java_home: Path, tmp_path: Path) -> None:
    plan = plan_jvm(tmp_path, 10)
    assert not keep_recording(plan, 0)
    assert plan.target is not None and not plan.target.exists()


def test_recordings_of_dead_processes_are_removed(java_home: Path, tmp_path: Path) -> None:
    target = archive_path(tmp_path)
    assert target is not None
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    abandoned = target.with_name(f"{target.name}.{dead.stdout.strip()}.tmp")
    live = target.with_name(f"{target.name}.{os.getppid()}.tmp")
    for leftover in (abandoned, live):
        leftover.write_bytes(b"partial")
    plan_jvm(tmp_path, 10)
    assert not abandoned.exists() and live.exists()


def _export(state_dir: Path, text: str) -> Path:
    path = state_dir / "export" / "bus.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_bytes_to_read_counts_what_the_next_build_reads(tmp_path: Path) -> None:
    paths = HistoryPaths(tmp_path)
    export = _export(tmp_path, "x" * 99 + "\n")
    spec = resolve_input(None, paths)
    assert bytes_to_read(spec, paths, full=False) == 100  # no build yet: everything
    save_state(paths, BuildState(input=spec.label, files={str(export): FileMark(60, "")}))
    assert bytes_to_read(spec, paths, full=False) == 40  # only after the watermark
    assert bytes_to_read(spec, paths, full=True) == 100
    save_state(paths, BuildState(input="another input"))
    assert bytes_to_read(spec, paths, full=False) == 100


def test_bytes_to_read_of_a_remote_input_is_unknown(tmp_path: Path) -> None:
    paths = HistoryPaths(tmp_path)
    assert bytes_to_read(resolve_input("s3a://bucket/bus/", paths), paths, full=False) is None
