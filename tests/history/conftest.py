"""One SparkSession for the whole history suite (a JVM start costs seconds)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registry.history.errors import java_available
from tests.ci import missing_part
from tests.history.history_files import (
    MALFORMED,
    ClusterBuild,
    PendingClusterBuild,
    start_cluster_build,
    suite_events,
    with_malformed,
    write_export,
)

CLUSTER_BUILD = pytest.StashKey[PendingClusterBuild]()
BACKGROUND_NICENESS = 10  # in a serial run the foreground tests keep the CPU they need
# The xdist group of every test on the run's one SparkSession or the shared cluster
# build: `--dist loadgroup` sends all of them to one worker, so a parallel run still
# starts one session and one cluster build (and, the largest group, they go first).
SPARK_GROUP = "spark"
SHARED_FIXTURES = frozenset({"spark", "cluster_build"})


def _needs_cluster_build(item: pytest.Item) -> bool:
    return "cluster_build" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the shared local-cluster build run last, so the build started in
    the background has the rest of the run to finish (a stable sort); every test on
    the shared Spark fixtures joins SPARK_GROUP."""
    items.sort(key=_needs_cluster_build)
    for item in items:
        if SHARED_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _start_cluster_build(session: pytest.Session) -> None:
    """Start the shared local-cluster build (``cluster_build``) in the background if
    this process runs a test that needs it. It takes about a minute, mostly waiting
    on JVMs; in the background it overlaps the rest of the run (its tests run last)."""
    config = session.config
    if CLUSTER_BUILD in config.stash or config.option.collectonly:
        return
    if not any(_needs_cluster_build(item) for item in session.items) or not java_available():
        return
    root = Path(tempfile.mkdtemp(prefix="orchestrate-cluster-build-"))
    source = write_export(root / "input", with_malformed(suite_events()))
    # Serial, the build takes the idle core. Under xdist no core idles: niced, it
    # starved, and its worker sat idle at the end of SPARK_GROUP waiting for it.
    niceness = 0 if _is_xdist_worker(config) else BACKGROUND_NICENESS
    config.stash[CLUSTER_BUILD] = start_cluster_build(source, root, niceness=niceness)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A serial run starts the shared build as soon as it knows it needs it. Under
    xdist every worker collects every test, so a worker waits until it runs one
    (``pytest_runtest_setup``): only the worker given SPARK_GROUP starts the build."""
    if not _is_xdist_worker(session.config):
        _start_cluster_build(session)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _is_xdist_worker(item.config) and SHARED_FIXTURES & set(getattr(item, "fixturenames", ())):
        _start_cluster_build(item.session)


def pytest_sessionfinish(session: pytest.Session) -> None:
    pending = session.config.stash.get(CLUSTER_BUILD, None)
    if pending is None:
        return
    if pending.process.poll() is None:  # the run ended before a test waited for it
        pending.process.terminate()  # the build stops its JVMs on SIGTERM
        try:
            pending.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pending.process.kill()
            pending.process.wait()
    shutil.rmtree(pending.state_dir.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, events: list[str]) -> Iterator[Any]:
    """The single local SparkSession of the test run (a JVM start costs seconds).

    The local-cluster test runs its build in a subprocess through the CLI, so
    this session is never stopped and restarted in between. Its JVM is the one
    `history build` plans for a small read (C1 JIT only; no class archive, which
    would cost a recording per run): C2 doubled the session's CPU time here.
    """
    if not java_available():  # pragma: no cover - the CI image has Java 17
        missing_part("Spark tests need Java (apt-get install -y default-jre-headless)")
    from registry.history.jvm import plan_jvm
    from registry.history.spark_session import create_session

    log = tmp_path_factory.mktemp("spark") / "spark.log"
    jvm = plan_jvm(cache_dir=None, read_bytes=sum(map(len, events)))  # the suite's biggest input
    session = create_session("local[2]", driver_memory="1g", log_path=log, jvm=jvm)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def events() -> list[str]:
    """A few hours of generated bus traffic (~2,000 jobs' worth of lines)."""
    return suite_events()


@pytest.fixture(scope="session")
def built(spark: Any, events: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state dir with `events` plus every kind of malformed line, built once."""
    from registry.history.spark_job import run_build

    state_dir = tmp_path_factory.mktemp("built") / "state"
    write_export(state_dir, with_malformed(events))
    report = run_build(spark, state_dir)
    assert report.full and report.malformed == len(MALFORMED)
    return state_dir


@pytest.fixture(scope="session")
def cluster_build(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> ClusterBuild:
    """`built`'s export built again through the CLI on a local cluster, recording the
    JVM class archive on the way (``start_cluster_build``), usually started at
    collection (``pytest_collection_finish``). Never modified by a test."""
    pending = request.config.stash.get(CLUSTER_BUILD, None)
    if pending is None:
        root = tmp_path_factory.mktemp("cluster")
        source = write_export(root / "input", with_malformed(suite_events()))
        pending = start_cluster_build(source, root)
    return pending.finish()
