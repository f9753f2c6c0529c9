"""One SparkSession for the whole history suite (a JVM start costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registry.history.errors import java_available
from registry.history.synthetic import generate_lines
from tests.history.history_files import (
    MALFORMED,
    ClusterBuild,
    run_cluster_build,
    write_export,
)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The single local SparkSession of the test run (a JVM start costs seconds).

    The local-cluster test runs its build in a subprocess through the CLI, so
    this session is never stopped and restarted in between.
    """
    if not java_available():  # pragma: no cover - the CI image has Java 17
        pytest.skip("Spark tests need Java (apt-get install -y default-jre-headless)")
    from registry.history.spark_job import create_session

    log = tmp_path_factory.mktemp("spark") / "spark.log"
    session = create_session("local[2]", driver_memory="1g", log_path=log)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def events() -> list[str]:
    """A few hours of generated bus traffic (~2,000 jobs' worth of lines)."""
    return generate_lines(6000, seed=11, jobs_per_hour=150)


@pytest.fixture(scope="session")
def built(spark: Any, events: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state dir with `events` plus every kind of malformed line, built once."""
    from registry.history.spark_job import run_build

    state_dir = tmp_path_factory.mktemp("built") / "state"
    lines = list(events)
    for index, bad in enumerate(MALFORMED):
        lines.insert(500 * (index + 1), bad)
    write_export(state_dir, lines)
    report = run_build(spark, state_dir)
    assert report.full and report.malformed == len(MALFORMED)
    return state_dir


@pytest.fixture(scope="session")
def cluster_build(built: Path, tmp_path_factory: pytest.TempPathFactory) -> ClusterBuild:
    """`built`'s export built again through the CLI on a local cluster, recording the
    JVM class archive on the way (``run_cluster_build``). Never modified by a test."""
    return run_cluster_build(built / "export" / "bus.jsonl", tmp_path_factory.mktemp("cluster"))
