"""What deletion vectors buy the engine, and what they cost readers (docs/readers.md).

The same landing files are mirrored twice in one warm session: into a table with deletion vectors
(`deletion_vectors: true`, the default) and into one without (`deletion_vectors: false`). Per
MERGE pass it prints wall and CPU seconds of the process tree and the bytes of data files the
commit wrote, then the time delta-rs takes to read each table back (QueryBuilder, which applies
deletion vectors). Two batches, as mirror_bench generates them (60% updates, 20% inserts, 20%
deletes): a small one (the `--watch` case) and one of base/10 changes in 10 files.

    .venv/bin/python bench/deletion_vectors_bench.py --scale 0.1   # 1M rows: ~3 minutes
    .venv/bin/python bench/deletion_vectors_bench.py --scale 1.0   # 10M rows (mirror_bench's)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CpuTime, emit, print_table, spark_session
from mirror_bench import generate


def _commit_bytes(table: Path, version: int) -> tuple[int, int]:
    """(bytes of data files, bytes of deletion-vector files) the commit `version` added."""
    data = dv = 0
    log = table / "_delta_log" / f"{version:020d}.json"
    for line in log.read_text().splitlines():
        add = json.loads(line).get("add") if line.strip() else None
        if add:
            data += int(add.get("size", 0))
            vector = add.get("deletionVector") or {}
            if vector.get("storageType") == "u":
                dv += int(vector.get("sizeInBytes", 0))
    return data, dv


def _read_seconds(path: Path) -> float:
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    start = time.perf_counter()
    query = QueryBuilder().register("t", DeltaTable(str(path)))
    pa.RecordBatchReader.from_stream(query.execute("SELECT * FROM t")).read_all()
    return time.perf_counter() - start


_NEXT: dict[str, int] = {}  # the last landing sequence number given to each table


def _initial_load(spark, root: Path, mode: str, switch: bool, first: Path):
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables

    landing = root / "landing" / mode / "facts"
    landing.mkdir(parents=True)
    shutil.copy(first, landing)
    (landing / "_metadata.json").write_text('{"keyColumns": ["id"]}\n')
    delta = root / "warehouse" / mode / "dbo" / "facts"
    target = MirrorTarget(f"dbo.facts_{mode}", None, "facts", str(landing), str(delta), switch)
    result = mirror_tables(spark, [target], str(delta.parents[1]), MirrorOptions(threads=1))
    assert not result.failed, result.tables
    return target


def _pass(spark, root: Path, target, files: list[Path]) -> tuple[float, float, int, int]:
    """One engine pass applying `files` (renumbered after what the table holds): wall and CPU
    seconds, bytes of data and deletion-vector files the commit wrote."""
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_tables

    landing = Path(target.landing_path)
    for path in files:
        number = _NEXT[target.unique_id] = _NEXT.get(target.unique_id, 1) + 1
        shutil.copy(path, landing / f"{number:020d}.parquet")
    with CpuTime() as cpu:
        start = time.perf_counter()
        result = mirror_tables(spark, [target], str(Path(target.delta_path).parents[1]),
                               MirrorOptions(threads=1))
        wall = time.perf_counter() - start
    assert not result.failed, result.tables
    data, dv = _commit_bytes(Path(target.delta_path), result.tables[0].delta_version)
    return wall, cpu.seconds, data, dv


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1, help="1.0 = 10M rows")
    parser.add_argument("--small-batch", type=int, default=1000, help="changes of the small pass")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    base = int(10_000_000 * args.scale)
    root = Path(tempfile.mkdtemp(prefix="dv-bench-"))
    spark = spark_session()
    rows, figures = [], {"base_rows": base}
    try:
        batches = {"small": (args.small_batch, 1), "large": (max(base // 10, 10), 10)}
        changes = {}
        for name, (count, files) in batches.items():
            changes[name] = generate(root / "gen" / name, root / "changes" / name, base, count,
                                     files, seed=7)[1]
        targets = {}
        for mode, switch in (("on", True), ("off", False)):
            targets[mode] = _initial_load(spark, root, mode, switch,
                                          root / "gen" / "small" / "00000000000000000001.parquet")
        # a throw-away pass first, so that neither mode pays the JIT warm-up of the MERGE
        for mode in ("on", "off"):
            _pass(spark, root, targets[mode], changes["small"][:1])
        for name in ("small", "large"):  # the two modes alternate: a busy moment hits both
            for mode in ("on", "off"):
                wall, cpu, data, dv = _pass(spark, root, targets[mode], changes[name])
                rows.append([f"DV {mode}", name, batches[name][0], f"{wall:.2f}", f"{cpu:.2f}",
                             f"{data / 1024:,.0f} KiB", f"{dv / 1024:,.0f} KiB"])
                figures[f"{mode}_{name}_wall_s"] = round(wall, 2)
                figures[f"{mode}_{name}_cpu_s"] = round(cpu, 2)
                figures[f"{mode}_{name}_bytes_written"] = data + dv
        for mode in ("on", "off"):
            read = _read_seconds(Path(targets[mode].delta_path))
            figures[f"{mode}_read_s"] = round(read, 2)
            rows.append([f"DV {mode}", "delta-rs read of the whole table", "", f"{read:.2f}", "",
                         "", ""])
        print(f"base table: {base:,} rows; one warm local[2] session; {os.cpu_count()} cores")
        print_table(["table", "pass", "changes", "wall s", "CPU s", "data written",
                     "DV files written"], rows)
        emit(figures, args.json)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
