"""The Spark session a history build runs in: started with our settings, its JVM as
``registry.history.jvm`` plans it, and stopped so a recording JVM writes (or drops)
its class archive. With ``spark_job`` and ``spark_sql``, the only modules that import pyspark."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from registry.history.errors import HistoryBuildFailed, JavaNotFound, java_available
from registry.history.jvm import JvmPlan, keep_recording, kill_starting_jvm

# Writing the ~190 MB class archive at exit took about 16 s here (1M-event build).
JVM_EXIT_TIMEOUT_S = 120
SESSION_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "16",
    "spark.sql.files.maxPartitionBytes": str(64 << 20),
    # collect_list per (hour, agent) runs in ObjectHashAggregate, which falls back
    # to sorting past 128 groups per task; a week of hours x agents is more.
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "65536",
}


@contextlib.contextmanager
def _stderr_to(log_path: Path | None) -> Iterator[None]:
    """Point fd 2 at ``log_path`` while the JVM is spawned, so it inherits the file
    and its log lines never interleave with our progress lines."""
    if log_path is None:
        yield
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.dup2(log_fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log_fd)


def create_session(
    master: str = "local[*]",
    *,
    driver_memory: str = "2g",
    log_path: Path | None = None,
    app_name: str = "orchestrate-history",
    jvm: JvmPlan | None = None,
) -> SparkSession:
    """A SparkSession set up as FIELD-NOTES measured best (UTC, micros, no UI, AQE),
    its driver JVM started as ``jvm`` plans (``registry.history.jvm``)."""
    if not java_available():
        raise JavaNotFound()
    if master.startswith("local"):
        # Loopback only; a real cluster's executors must reach the driver's address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # The per-job pass (registry.history.job_pass) runs in Python workers; PySpark
    # starts them with `python3` from PATH unless told, which may lack numpy, pyarrow
    # or this package. A user's own PYSPARK_PYTHON (a cluster's) still wins.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    builder = builder.config("spark.driver.memory", driver_memory)
    for key, value in SESSION_CONF.items():
        builder = builder.config(key, value)
    if jvm is not None and jvm.java_options:
        # The options Spark puts before extraJavaOptions: a user's own (spark-defaults.conf)
        # still apply, after ours, where setting extraJavaOptions would drop them.
        builder = builder.config("spark.driver.defaultJavaOptions", jvm.java_options)
    try:
        with _stderr_to(log_path):
            spark = builder.getOrCreate()
    except (PySparkException, Py4JError, OSError) as exc:
        if jvm is not None:
            keep_recording(jvm, None)  # what a JVM that failed to start wrote is useless
        where = f" (JVM log: {log_path})" if log_path else ""
        raise HistoryBuildFailed(f"cannot start Spark with master {master!r}{where}") from exc
    except BaseException:  # interrupted (Ctrl-C, SIGTERM) while the JVM starts
        kill_starting_jvm()
        if jvm is not None:
            keep_recording(jvm, None)
        raise
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def end_jvm(spark: SparkSession, jvm: JvmPlan | None = None) -> None:
    """Signal the build's JVM to end now; safe in a signal handler (one kill, no py4j).

    The Ctrl-C handler's KeyboardInterrupt alone cannot stop a build: Python drops an
    exception raised while a finalizer runs, and py4j's finalizers (each releases a
    Java object with a round trip to the JVM) run often during a build, so the build
    went on to its end and exited 0. With its JVM gone, its next Spark call fails. A
    recording JVM is killed (it would write ~190 MB of archive as it exits), any other
    terminated, so Spark's shutdown hooks remove its temporary files.
    """
    process = getattr(spark.sparkContext._gateway, "proc", None)
    if process is not None:
        recording = jvm is not None and jvm.recording is not None
        with contextlib.suppress(OSError):
            process.send_signal(signal.SIGKILL if recording else signal.SIGTERM)


def stop_session(
    spark: SparkSession,
    jvm: JvmPlan | None = None,
    *,
    failed: bool = False,
    interrupted: bool = False,
) -> bool:
    """Stop Spark. When the JVM records a class archive, also end the JVM and wait for
    it to write the archive, then keep it (True) if it exited cleanly.

    The JVM writes the archive as it exits, which it does once Python closes its
    stdin (PySpark's gateway protocol); waiting here lets us rename a complete file.
    After a ``failed`` build the recording JVM is killed instead: it would otherwise
    go on writing ~190 MB for ~16 s after we are gone, for an archive of a build that
    did not happen. An ``interrupted`` build (Ctrl-C, SIGTERM) ends its JVM whether it
    records or not (``end_jvm``) and waits for it to be gone: nothing is left behind.
    """
    process = getattr(spark.sparkContext._gateway, "proc", None)
    recording = jvm is not None and jvm.recording is not None
    failed = failed or interrupted
    if process is not None and (interrupted or (failed and recording)):
        end_jvm(spark, jvm)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=JVM_EXIT_TIMEOUT_S)
    try:
        spark.stop()
    except (Py4JError, OSError):
        if not failed:
            raise
    if jvm is None or not recording:
        return False
    exit_code: int | None = None
    if not failed and process is not None and process.stdin is not None:
        process.stdin.close()
        try:
            exit_code = process.wait(timeout=JVM_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
        except BaseException:  # interrupted while the JVM writes: it must not go on
            process.kill()
            keep_recording(jvm, None)
            raise
    return keep_recording(jvm, exit_code)
