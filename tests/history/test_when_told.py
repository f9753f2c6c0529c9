"""`history build --when-told`: Spark started and warmed up ahead (the History screen
starts it when opened), the build only once told "go"; told nothing, it stops Spark
and builds nothing. Through the real CLI and a real JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from registry.history.errors import java_available
from registry.history.schema import HistoryPaths
from tests.ci import missing_part
from tests.history.history_files import without_hadoop_conf, write_export

pytestmark = pytest.mark.spark
SMALL = ("--master", "local[1]", "--driver-memory", "512m", "--no-class-archive")


def told(state_dir: Path, tmp: Path, answer: str) -> subprocess.CompletedProcess[str]:
    """`history build --when-told` given ``answer`` on stdin once it says it is ready
    (the answer is there from the start: it reads stdin only once warm)."""
    tmp.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history", "build"]
    return subprocess.run(
        [*argv, *SMALL, "--when-told"],
        input=answer,
        capture_output=True,
        text=True,
        env={**without_hadoop_conf(os.environ), "TMPDIR": str(tmp)},
        timeout=400,
    )


def test_when_told_without_an_export_fails_before_spark(tmp_path: Path) -> None:
    """Bad input is refused before any JVM starts (and before waiting to be told)."""
    proc = told(tmp_path / "state", tmp_path / "tmp", "go\n")
    assert proc.returncode == 1
    assert "starting Spark" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "no bus export" in proc.stderr


@pytest.mark.slow
def test_told_to_go_it_builds_after_warming_up(tmp_path: Path, events: list[str]) -> None:
    if not java_available():
        missing_part("Spark needs Java (apt-get install -y default-jre-headless)")
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:2000])
    proc = told(state_dir, tmp_path / "tmp", "go\n")
    assert proc.returncode == 0, proc.stderr
    said = proc.stderr.splitlines()
    warmed = next(i for i, line in enumerate(said) if line.startswith("history: warmed up Spark"))
    ready = said.index("history: ready: waiting for 'go' on stdin")
    built = next(i for i, line in enumerate(said) if "first build: full" in line)
    assert warmed < ready < built
    assert "full build: " in proc.stdout and "from 2000 lines" in proc.stdout
    assert HistoryPaths(state_dir).aggregates.is_file()
    assert list((tmp_path / "tmp").glob("orchestrate-warm-up-*")) == []  # its scratch dir


@pytest.mark.slow
def test_not_told_it_stops_spark_and_builds_nothing(tmp_path: Path, events: list[str]) -> None:
    if not java_available():
        missing_part("Spark needs Java (apt-get install -y default-jre-headless)")
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:500])
    proc = told(state_dir, tmp_path / "tmp", "")  # end of input: the screen closed
    assert proc.returncode == 0, proc.stderr
    assert "history: not told to go: Spark stopped, nothing built" in proc.stderr
    assert proc.stdout == ""
    assert not HistoryPaths(state_dir).aggregates.exists()
    assert list((tmp_path / "tmp").glob("orchestrate-warm-up-*")) == []
