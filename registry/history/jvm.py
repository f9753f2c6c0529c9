"""How a history build starts its JVM: a class-data-sharing archive, and C1 for small reads.

Every `orchestrate history build` is a fresh JVM that lives for seconds, so much of
a build is the JVM warming up: loading Spark's classes and JIT-compiling them. Two
standard HotSpot features cut that (bench/history.py --cold has the numbers):

* an AppCDS archive of the classes a build loads, written by the first build's JVM
  as it exits and mapped by every later one. It is named after the Java runtime and
  the driver's class path (PySpark's version and place, SPARK_HOME, SPARK_CONF_DIR),
  so an upgrade or another virtualenv records its own: the JVM maps an archive only
  for the class path it was recorded with, and ignores (never fails on) any other;
* the C1 compiler alone (``-XX:TieredStopAtLevel=1``) when the build reads little:
  C2's faster code does not repay its compile time on a small read, but does on a
  big one.

Nothing here imports pyspark: the CLI plans the JVM before starting it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path

from registry.history.errors import java_binary

# Below this many bytes to read, C1 alone. On 335 MB (1M events) a cold full build
# took the same time either way; past that C2's code, ~1.6x faster warm, wins.
C1_ONLY_BELOW_BYTES = 256 << 20
C1_ONLY = "-XX:TieredStopAtLevel=1"
# The JVM reports every class it cannot archive (hundreds, at warning level) on stdout.
QUIET_CDS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
ARCHIVE_GLOB = "spark-*.jsa"


@dataclass(frozen=True)
class JvmPlan:
    """The driver JVM's options for one build, and which class archive it maps or writes."""

    java_options: str  # spark.driver.defaultJavaOptions
    archive: Path | None = None  # the archive this JVM maps
    recording: Path | None = None  # where this JVM writes a new archive as it exits
    target: Path | None = None  # where a recording goes once the JVM exited cleanly

    def describe(self) -> str:
        """One progress line: what the JVM was started with."""
        jit = "C1 JIT" if C1_ONLY in self.java_options else "C1+C2 JIT"
        if self.archive is not None:
            return f"JVM: {jit}, class archive {self.archive}"
        if self.recording is not None:
            return f"JVM: {jit}, recording a class archive for later builds (once)"
        return f"JVM: {jit}, no class archive"


def _class_path_key() -> str:
    """What decides the driver's class path, which an archive must match: PySpark's
    jars (its version and where it is installed) and Spark's conf dir (on the path)."""
    try:
        spark = version("pyspark")
    except PackageNotFoundError:
        spark = "unknown"
    spec = find_spec("pyspark")
    place = str(Path(spec.origin).resolve().parent) if spec and spec.origin else "?"
    env = [os.environ.get(name, "") for name in ("SPARK_HOME", "SPARK_CONF_DIR")]
    return ":".join([spark, place, *env])


def archive_path(cache_dir: Path) -> Path | None:
    """The archive for this Java runtime and Spark class path, or None without Java."""
    java = java_binary()
    if java is None:
        return None
    real = java.resolve()
    stat = real.stat()
    key = f"{real}:{stat.st_size}:{stat.st_mtime_ns}:{_class_path_key()}"
    return cache_dir / f"spark-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def _quoted(option: str, path: Path) -> str:
    # Spark splits java options like a shell: quote the path, it may hold spaces
    return f'{option}="{path}"'


def plan_jvm(cache_dir: Path | None, read_bytes: int | None) -> JvmPlan:
    """The options for a build that reads ``read_bytes`` (None: unknown, a remote
    input), with a class archive under ``cache_dir`` (None: no archive)."""
    options: list[str] = []
    if read_bytes is not None and read_bytes < C1_ONLY_BELOW_BYTES:
        options.append(C1_ONLY)
    target = archive_path(cache_dir) if cache_dir is not None else None
    if target is None:
        return JvmPlan(" ".join(options))
    if target.is_file():
        options += [_quoted("-XX:SharedArchiveFile", target), *QUIET_CDS]
        return JvmPlan(" ".join(options), archive=target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # an unwritable cache dir costs speed, never the build
        return JvmPlan(" ".join(options))
    _remove_abandoned_recordings(target.parent)
    recording = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    options += [_quoted("-XX:ArchiveClassesAtExit", recording), *QUIET_CDS]
    return JvmPlan(" ".join(options), recording=recording, target=target)


def keep_recording(plan: JvmPlan, jvm_exit_code: int | None) -> bool:
    """Put the archive the JVM wrote in place if it exited cleanly (a JVM killed while
    writing leaves half a file), and drop archives of other Java or Spark versions."""
    if plan.recording is None or plan.target is None:
        return False
    written = plan.recording.is_file() and plan.recording.stat().st_size > 0
    if jvm_exit_code != 0 or not written:
        plan.recording.unlink(missing_ok=True)
        return False
    os.replace(plan.recording, plan.target)
    for other in plan.target.parent.glob(ARCHIVE_GLOB):
        if other != plan.target:
            other.unlink(missing_ok=True)
    return True


def _remove_abandoned_recordings(directory: Path) -> None:
    """Recordings whose process is gone (killed mid-build) are half-written: remove."""
    for leftover in directory.glob(f"{ARCHIVE_GLOB}.*.tmp"):
        pid = leftover.suffixes[-2].lstrip(".")
        if pid.isdigit() and not _alive(int(pid)):
            leftover.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def kill_starting_jvm() -> None:
    """Kill the Spark JVM this process was starting. PySpark keeps no handle on it
    until it is up, and starts it ignoring SIGINT: interrupted in between, it was
    left running for good, orphaned (seen still there minutes later)."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):  # Linux; elsewhere nothing to find
        try:
            parent = stat.read_text().rsplit(")", 1)[1].split()[1]
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if parent == me and (b"org.apache.spark" in command or b"spark-" in command):
            with contextlib.suppress(OSError):
                os.kill(int(stat.parent.name), signal.SIGKILL)
