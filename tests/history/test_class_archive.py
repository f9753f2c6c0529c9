"""The JVM class archive end to end, through the real CLI: the first build records it,
later builds map it, and a damaged one is ignored, never fatal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from registry.history.errors import java_available
from registry.history.synthetic import generate_lines

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not java_available(), reason="Spark needs Java"),
]

SMALL = ("--master", "local[1]", "--driver-memory", "512m")


def build(
    state_dir: Path, cache: Path, *flags: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`orchestrate history build` in a fresh process, with its own cache dir."""
    argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history", "build"]
    return subprocess.run(
        [*argv, *(flags or SMALL)],
        capture_output=True,
        text=True,
        env={**os.environ, "ORCHESTRATE_CACHE_DIR": str(cache), **env},
        timeout=240,
    )


def append_export(state_dir: Path, lines: list[str]) -> None:
    export = state_dir / "export" / "bus.jsonl"
    export.parent.mkdir(parents=True, exist_ok=True)
    with export.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """A state dir built once, whose JVM recorded the archive into its own cache dir."""
    root = tmp_path_factory.mktemp("archive")
    state_dir, cache = root / "state", root / "cache"
    lines = generate_lines(3_000, seed=5, jobs_per_hour=200)
    append_export(state_dir, lines[:2_000])
    proc = build(state_dir, cache)
    assert proc.returncode == 0, proc.stderr
    assert "recording a class archive for later builds" in proc.stderr
    assert "class archive saved" in proc.stderr
    return state_dir, cache, lines


def test_the_first_build_leaves_one_complete_archive(recorded: tuple[Path, Path, list[str]]):
    _, cache, _ = recorded
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 1 and files[0].startswith("spark-") and files[0].endswith(".jsa")
    assert (cache / files[0]).stat().st_size > 10_000_000  # Spark's classes, not a stub


def test_a_later_build_maps_the_archive(recorded: tuple[Path, Path, list[str]]) -> None:
    """-Xshare:on makes the JVM refuse to start unless it maps every archive it is given,
    so a green build here proves the archive was used, not merely passed."""
    state_dir, cache, lines = recorded
    append_export(state_dir, lines[2_000:])
    proc = build(state_dir, cache, JAVA_TOOL_OPTIONS="-Xshare:on")
    assert proc.returncode == 0, proc.stderr
    assert "JVM: C1 JIT, class archive" in proc.stderr
    assert "incremental build: " in proc.stdout and "from 1000 line(s)" in proc.stdout


def damaged_copy(cache: Path, into: Path) -> Path:
    """A cache dir whose archive (same name as the recorded one) is 4 KB of zeros."""
    into.mkdir()
    (into / next(cache.glob("spark-*.jsa")).name).write_bytes(b"\0" * 4096)
    return into


SPARK_RAN = "Master must either be yarn or start with spark, k8s, or local"


def test_a_damaged_archive_is_ignored(recorded: tuple[Path, Path, list[str]], tmp_path: Path):
    """The JVM checks the archive's header and runs without a bad one (-Xshare:auto).

    A bad master URL keeps this cheap: Spark's own code in that JVM rejecting it
    proves the JVM started past the archive (the control below stops before)."""
    _, cache, lines = recorded
    damaged = damaged_copy(cache, tmp_path / "cache")
    state_dir = tmp_path / "state"
    append_export(state_dir, lines[:500])
    proc = build(state_dir, damaged, "--master", "nonsense://x")
    assert proc.returncode == 1 and "cannot start Spark with master" in proc.stderr
    log = (state_dir / "history" / "spark.log").read_text()
    assert SPARK_RAN in log and "bad magic number" not in log


def test_xshare_on_refuses_a_damaged_archive(
    recorded: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    """The control for the two tests above: under -Xshare:on an archive the JVM cannot
    map stops it before any Spark code runs, so a green build there means mapped."""
    _, cache, lines = recorded
    damaged = damaged_copy(cache, tmp_path / "cache")
    state_dir = tmp_path / "state"
    append_export(state_dir, lines[:500])
    proc = build(state_dir, damaged, "--master", "nonsense://x", JAVA_TOOL_OPTIONS="-Xshare:on")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("orchestrate: cannot start Spark")
    log = (state_dir / "history" / "spark.log").read_text()
    assert "bad magic number" in log and SPARK_RAN not in log
