"""The JVM class archive end to end, through the real CLI: the first build records it
(the shared local-cluster build, conftest's ``cluster_build``), later builds map it,
and a damaged one is ignored, never fatal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from registry.history.errors import java_available
from tests.ci import missing_part
from tests.history.history_files import (
    REFUSED_MASTER,
    SPARK_REFUSED,
    ClusterBuild,
    without_hadoop_conf,
    write_export,
)
from tests.polling import poll_until

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def java() -> None:
    """Spark needs Java: a skip here, a failure under CI (tests/ci.py)."""
    if not java_available():
        missing_part("Spark needs Java (apt-get install -y default-jre-headless)")


SMALL = ("--master", "local[1]", "--driver-memory", "512m")
# Recording an archive costs a JVM ~35 s of CPU over a plain build, and the shared
# local-cluster build that records the suite's one (three JVMs) ~80 s: together a
# quarter of the default run's CPU. The tests that record or map an archive, and
# the ones that kill or fail a recording build (fault injection), run in CI's
# `scripts/test --all`; the default run keeps the JVM plan's unit tests
# (test_jvm_plan.py) and the two cheap JVM tests below.
RECORDS = pytest.mark.slow
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"  # the driver JVM's main class


def build(
    state_dir: Path, cache: Path, *flags: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`orchestrate history build` in a fresh process, with its own cache dir."""
    argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history", "build"]
    return subprocess.run(
        [*argv, *(flags or SMALL)],
        capture_output=True,
        text=True,
        env={**without_hadoop_conf(os.environ), "ORCHESTRATE_CACHE_DIR": str(cache), **env},
        timeout=240,
    )


@RECORDS
def test_the_first_build_records_one_complete_archive(cluster_build: ClusterBuild) -> None:
    """The first build (the shared local-cluster one, with an empty cache dir) says it
    records, waits for the JVM to write the archive at exit, and keeps exactly one."""
    assert "recording a class archive for later builds" in cluster_build.proc.stderr
    assert "class archive saved" in cluster_build.proc.stderr
    cache = cluster_build.cache
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 1 and files[0].startswith("spark-") and files[0].endswith(".jsa")
    assert (cache / files[0]).stat().st_size > 10_000_000  # Spark's classes, not a stub


@RECORDS
def test_a_later_build_maps_the_archive(
    cluster_build: ClusterBuild, events: list[str], tmp_path: Path
) -> None:
    """-Xshare:on makes the JVM refuse to start unless it maps every archive it is given,
    so a green build here proves the archive was used, not merely passed."""
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:1000])
    proc = build(state_dir, cluster_build.cache, JAVA_TOOL_OPTIONS="-Xshare:on")
    assert proc.returncode == 0, proc.stderr
    assert "JVM: C1 JIT, class archive" in proc.stderr
    assert "full build: " in proc.stdout and "from 1000 lines" in proc.stdout


def damaged_copy(cache: Path, into: Path) -> Path:
    """A cache dir whose archive (same name as the recorded one) is 4 KB of zeros."""
    into.mkdir()
    (into / next(cache.glob("spark-*.jsa")).name).write_bytes(b"\0" * 4096)
    return into


@RECORDS
def test_a_damaged_archive_is_ignored(
    cluster_build: ClusterBuild, events: list[str], tmp_path: Path
) -> None:
    """The JVM checks the archive's header and runs without a bad one (-Xshare:auto).

    A bad master URL keeps this cheap: Spark's own code in that JVM rejecting it
    proves the JVM started past the archive (the control below stops before)."""
    damaged = damaged_copy(cluster_build.cache, tmp_path / "cache")
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:500])
    proc = build(state_dir, damaged, "--master", REFUSED_MASTER)
    assert proc.returncode == 1 and "cannot start Spark with master" in proc.stderr
    log = (state_dir / "history" / "spark.log").read_text()
    assert SPARK_REFUSED in log and "bad magic number" not in log


@RECORDS
def test_xshare_on_refuses_a_damaged_archive(
    cluster_build: ClusterBuild, events: list[str], tmp_path: Path
) -> None:
    """The control for the two tests above: under -Xshare:on an archive the JVM cannot
    map stops it before any Spark code runs, so a green build there means mapped."""
    damaged = damaged_copy(cluster_build.cache, tmp_path / "cache")
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:500])
    proc = build(state_dir, damaged, "--master", REFUSED_MASTER, JAVA_TOOL_OPTIONS="-Xshare:on")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("orchestrate: cannot start Spark")
    log = (state_dir / "history" / "spark.log").read_text()
    assert "bad magic number" in log and SPARK_REFUSED not in log


@RECORDS
def test_a_jvm_that_fails_to_start_leaves_no_recording(tmp_path: Path, events: list[str]):
    """A first build whose JVM cannot start (a bad master) writes an archive as it
    exits; it is incomplete (no build ran), so it is removed, not kept or left behind."""
    cache = tmp_path / "cache"
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:500])
    proc = build(state_dir, cache, "--master", REFUSED_MASTER)
    assert proc.returncode == 1 and "recording a class archive" in proc.stderr
    assert list(cache.iterdir()) == []


def test_the_users_driver_options_apply_with_ours(tmp_path: Path, events: list[str]) -> None:
    """A user's spark.driver.extraJavaOptions (spark-defaults.conf) and our JVM plan both
    reach the driver: the user's option here makes the JVM log its own command line."""
    conf_dir, vm_log = tmp_path / "spark-conf", tmp_path / "vm.log"
    conf_dir.mkdir()
    user = f"-XX:+UnlockDiagnosticVMOptions -XX:+LogVMOutput -XX:LogFile={vm_log}"
    (conf_dir / "spark-defaults.conf").write_text(f"spark.driver.extraJavaOptions {user}\n")
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:500])
    proc = build(
        state_dir,
        tmp_path / "cache",
        "--master",
        REFUSED_MASTER,  # Spark's code rejects it: the JVM ran, cheaply
        "--no-class-archive",
        SPARK_CONF_DIR=str(conf_dir),
    )
    assert proc.returncode == 1 and "JVM: C1 JIT" in proc.stderr
    assert "-XX:TieredStopAtLevel=1" in vm_log.read_text()  # ours


def _processes_naming(text: str) -> list[int]:
    """Pids of live processes whose command line mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def driver_jvms(cache: Path) -> set[int]:
    """Pids of Spark driver JVMs (spark-class has exec'd java) recording into ``cache``."""
    return set(_processes_naming(str(cache))) & set(_processes_naming(SPARK_SUBMIT))


def build_until(state_dir: Path, cache: Path, progress: str) -> subprocess.Popen[str]:
    """`orchestrate history build` in a fresh process, returned once its progress on
    stderr shows ``progress`` (what it prints after is left in ``proc.stderr``)."""
    argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history", "build"]
    proc = subprocess.Popen(
        [*argv, *SMALL],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "ORCHESTRATE_CACHE_DIR": str(cache)},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if progress in line:
            return proc
    raise AssertionError(f"the build ended before printing {progress!r}")


@RECORDS
def test_a_killed_first_build_leaves_no_recording_and_no_jvm(
    tmp_path: Path, events: list[str]
) -> None:
    """Ctrl-C during a build that records the archive: the JVM is killed rather than
    left writing ~190 MB, its partial file removed, and the user reads one line, not
    py4j's tracebacks. SIGTERM (the TUI closing mid-rebuild) takes the same handler,
    which replaces PySpark's own Ctrl-C handler once Spark is up."""
    cache = tmp_path / "cache"
    state_dir = tmp_path / "state"
    write_export(state_dir, events)
    proc = build_until(state_dir, cache, "first build: full")  # Spark is up, the build begins
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr is not None
    said = [line for line in proc.stderr.read().split("\n") if line]
    assert [line for line in said if not line.startswith("history: ")] == ["orchestrate: aborted"]
    assert _processes_naming(str(cache)) == []  # no JVM still writing into the cache
    assert list(cache.iterdir()) == []


@RECORDS
def test_ctrl_c_lost_in_a_finalizer_still_stops_the_build(
    tmp_path: Path, events: list[str]
) -> None:
    """Python drops the KeyboardInterrupt of a Ctrl-C that lands in a finalizer, and
    py4j's run often during a build: the build went on and exited 0. The handler ends
    the JVM first, so the build stops all the same, says "aborted" and exits 130."""
    cache = tmp_path / "cache"
    state_dir = tmp_path / "state"
    write_export(state_dir, events)
    wrapper = Path(__file__).with_name("interrupt_in_finalizer.py")
    argv = [sys.executable, str(wrapper), "--state-dir", str(state_dir), "history", "build"]
    proc = subprocess.run(
        [*argv, *SMALL],
        capture_output=True,
        text=True,
        env={**os.environ, "ORCHESTRATE_CACHE_DIR": str(cache)},
        timeout=240,
    )
    said = [line for line in proc.stderr.split("\n") if line]
    assert proc.returncode == 130, proc.stderr
    assert [line for line in said if not line.startswith("history: ")] == ["orchestrate: aborted"]
    assert "full build" not in proc.stdout
    assert _processes_naming(str(cache)) == []
    assert list(cache.iterdir()) == []


def test_a_build_killed_while_its_jvm_starts_leaves_no_jvm(
    tmp_path: Path, events: list[str]
) -> None:
    """SIGTERM before Spark is up: PySpark has no handle on the JVM yet (and starts it
    ignoring SIGINT), which used to leave it running, orphaned, for good."""
    cache = tmp_path / "cache"
    state_dir = tmp_path / "state"
    write_export(state_dir, events[:500])
    proc = build_until(state_dir, cache, "JVM: ")  # next it starts the JVM: seconds
    poll_until(lambda: driver_jvms(cache), timeout=60, what="the driver JVM to start")
    proc.terminate()
    assert proc.wait(timeout=60) == 130
    assert proc.stderr is not None
    assert "first build" not in proc.stderr.read()  # it was still starting
    # SIGKILLed processes take a moment to leave /proc; an orphaned JVM never does
    poll_until(lambda: not _processes_naming(str(cache)), timeout=5, what="no JVM left")
