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
BACKGROUND_NICENESS = 10  # the foreground tests keep the CPU they need


def _needs_cluster_build(item: pytest.Item) -> bool:
    return "cluster_build" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the shared local-cluster build run last, so the build started in
    the background at collection has the whole run to finish (a stable sort)."""
    items.sort(key=_needs_cluster_build)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the shared local-cluster build (``cluster_build``) as soon as the run
    knows it needs it. It takes about a minute, mostly waiting on JVMs; in the
    background it overlaps the rest of the run (its tests run last)."""
    wanted = any(_needs_cluster_build(item) for item in session.items)
    if session.config.option.collectonly or not wanted or not java_available():
        return
    root = Path(tempfile.mkdtemp(prefix="orchestrate-cluster-build-"))
    source = write_export(root / "input", with_malformed(suite_events()))
    pending = start_cluster_build(source, root, niceness=BACKGROUND_NICENESS)
    session.config.stash[CLUSTER_BUILD] = pending


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
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The single local SparkSession of the test run (a JVM start costs seconds).

    The local-cluster test runs its build in a subprocess through the CLI, so
    this session is never stopped and restarted in between.
    """
    if not java_available():  # pragma: no cover - the CI image has Java 17
        pytest.skip("Spark tests need Java (apt-get install -y default-jre-headless)")
    from registry.history.spark_session import create_session

    log = tmp_path_factory.mktemp("spark") / "spark.log"
    session = create_session("local[2]", driver_memory="1g", log_path=log)
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
