"""One SparkSession for the whole history suite (a JVM start costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from registry.history.errors import java_available


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
