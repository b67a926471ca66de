"""`mirrorspec debug`'s Spark start test: start the session a run would, write and read back a
one-row Delta table in a temporary folder, and say how long each took."""

from __future__ import annotations

import shutil
import tempfile
import time


def spark_round_trip(master: str | None, conf: dict[str, str], remote: str | None,
                     console=None) -> str:
    """Start Spark as the profile says and round-trip one Delta row; the detail line on success,
    any error raised as is (the caller reports it)."""
    from mirrorspec.spark.platform.session import build_session

    start = time.perf_counter()
    spark = build_session(master, conf, remote, console=console)
    started = time.perf_counter() - start
    folder = tempfile.mkdtemp(prefix="mirrorspec-debug-")
    try:
        start = time.perf_counter()
        path = f"{folder}/t"
        spark.range(1).write.format("delta").save(path)
        count = spark.read.format("delta").load(path).count()
        written = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if count != 1:
        raise RuntimeError(f"a one-row Delta table read back {count} rows")
    return (f"Spark {spark.version} started in {started:.1f} s; a Delta table written and read "
            f"back in {written:.1f} s")
