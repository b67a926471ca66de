"""Benchmark of the mirroring engine.

At --scale 1.0: a 10M-row table (initial load through the engine), then 1M changes — 60%
updates, 20% inserts, 20% deletes — in 100 Parquet files, applied by one engine pass. Prints
the pass's time, rows/s and peak memory (RSS of this process and its children: the JVM and
Python workers), and in the same run the ratios against
  (a) one Delta MERGE per file, in the same Spark session (with --baseline-files N only the
      first N files are timed and the time is extrapolated to all files; the output says so),
  (b) the `deltalake` package (delta-rs) merging the same changes: the net fold of all files
      (last change per key, computed with pyarrow and included in its time) in one MERGE.
Finally the three tables are compared (count, sums) so a fast wrong answer can't pass unseen.
With --floor it also times (c) the Spark floor: the least work any Spark implementation of this
MERGE must do (read the changes and keep the last one per key, find the table rows they touch,
write the new rows), as plain Spark jobs with no Delta commit, in the warm JVM. When delta-rs
beats even that floor, no MERGE path on Spark can beat delta-rs on this machine.

    .venv/bin/python bench/mirror_bench.py --scale 0.1
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PeakMemory

MARKER = "__rowMarker__"
TABLE = "facts"


# --- data ------------------------------------------------------------------------------------

_LABELS = pa.array([f"label-{i:04d}" for i in range(1000)])


def rows(rng: np.random.Generator, ids: np.ndarray, version: int) -> dict[str, pa.Array]:
    n = len(ids)
    return {
        "id": pa.array(ids, pa.int64()),
        "qty": pa.array(rng.integers(0, 1_000, n), pa.int64()),
        "amount": pa.array(np.round(rng.random(n) * 1000, 2), pa.float64()),
        "label": _LABELS.take(pa.array(rng.integers(0, len(_LABELS), n))),
        "version": pa.array(np.full(n, version), pa.int32()),
    }


def distinct_ids(rng: np.random.Generator, upper: int, count: int) -> np.ndarray:
    """`count` distinct ids in [0, upper) (no key twice in one file)."""
    chosen = np.unique(rng.integers(0, upper, int(count * 1.2) + 16))
    while len(chosen) < count:
        chosen = np.unique(np.concatenate([chosen, rng.integers(0, upper, count)]))
    return rng.permutation(chosen)[:count]


def generate(landing_table: Path, changes_dir: Path, base_rows: int, changes: int, files: int,
             seed: int):
    """Initial-load file 1 (base_rows) in the landing table, and change files 2..files+1 in
    `changes_dir` (kept there for the baselines); returns (base, change paths)."""
    rng = np.random.default_rng(seed)
    landing_table.mkdir(parents=True, exist_ok=True)
    changes_dir.mkdir(parents=True, exist_ok=True)
    (landing_table / "_metadata.json").write_text('{"keyColumns": ["id"]}\n')
    base = pa.table(rows(rng, np.arange(base_rows, dtype=np.int64), 0))
    pq.write_table(base, landing_table / "00000000000000000001.parquet", row_group_size=1 << 20)
    per_file = changes // files
    n_upd, n_ins = int(per_file * 0.6), int(per_file * 0.2)
    n_del = per_file - n_upd - n_ins
    next_id = base_rows
    paths = []
    for f in range(files):
        existing = distinct_ids(rng, base_rows, n_upd + n_del)
        inserted = np.arange(next_id, next_id + n_ins, dtype=np.int64)
        next_id += n_ins
        ids = np.concatenate([existing[:n_upd], inserted, existing[n_upd:]])
        columns = rows(rng, ids, f + 1)
        markers = np.concatenate([np.full(n_upd, 1), np.zeros(n_ins), np.full(n_del, 2)])
        columns[MARKER] = pa.array(markers, pa.int32())
        order = pa.array(rng.permutation(len(ids)))
        table = pa.table(columns).take(order)
        path = changes_dir / f"{f + 2:020d}.parquet"
        pq.write_table(table, path)
        paths.append(path)
    return base, paths


# --- the three contenders --------------------------------------------------------------------

def engine_pass(spark, landing: Path, warehouse: Path, threads: int):
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone

    result = mirror_landing_zone(spark, str(landing), str(warehouse), MirrorOptions(threads=threads))
    if result.failed:
        raise SystemExit(f"engine failed: {[t.error for t in result.tables if t.error]}")
    return result


def merge_per_file(spark, table_path: Path, paths: list[Path]) -> None:
    """One Delta MERGE per landing file, in order (keys are unique within a file here)."""
    from delta.tables import DeltaTable

    target = DeltaTable.forPath(spark, str(table_path))
    columns = ["id", "qty", "amount", "label", "version"]
    values = {c: f"s.`{c}`" for c in columns}
    for path in paths:
        source = spark.read.parquet(str(path))
        (target.alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedDelete(condition=f"s.{MARKER} = 2")
         .whenMatchedUpdate(condition=f"s.{MARKER} <> 2", set=values)
         .whenNotMatchedInsert(condition=f"s.{MARKER} <> 2", values=values)
         .execute())


def deltalake_merge(table_path: Path, paths: list[Path]) -> None:
    """delta-rs: the net fold of all files (last change per key) in one MERGE."""
    from deltalake import DeltaTable

    parts = []
    for order, path in enumerate(paths):
        part = pq.read_table(path)
        parts.append(part.append_column("__order", pa.array(
            np.arange(part.num_rows, dtype=np.int64) + (order << 32))))
    changes = pa.concat_tables(parts)
    # last change per key: sort by (id, order) and keep the row where the next id differs
    changes = changes.sort_by([("id", "ascending"), ("__order", "ascending")])
    ids = changes.column("id").to_numpy()
    last = np.ones(len(ids), dtype=bool)
    last[:-1] = ids[:-1] != ids[1:]
    source = changes.filter(pa.array(last)).drop_columns(["__order"])
    (DeltaTable(str(table_path))
     .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_delete(f"s.{MARKER} = 2")
     .when_matched_update_all(f"s.{MARKER} <> 2", except_cols=[MARKER])
     .when_not_matched_insert_all(f"s.{MARKER} <> 2", except_cols=[MARKER])
     .execute())


def spark_floor(spark, table_path: Path, paths: list[Path], scratch: Path) -> float:
    """Seconds of the three jobs every Spark MERGE of `paths` into the table must at least run:
    (1) read the changes, keep the last change per key (one shuffle) and write the rows to
    insert or update; (2) scan the table's key column and semi-join it with the changed keys
    (the rows to mark deleted). No Delta commit, no deletion vectors, no exact fold: a floor."""
    from pyspark.sql import functions as F

    files = [str(p) for p in paths]
    started = time.perf_counter()
    changes = spark.read.parquet(*files).withColumn(
        "__order", F.struct(F.col("_metadata.file_name"), F.col("_metadata.row_index")))
    data = [c for c in changes.columns if c != "__order"]
    last = (changes.groupBy("id")
            .agg(F.max_by(F.struct(*data), F.col("__order")).alias("r")).select("r.*"))
    (last.filter(F.col(MARKER) != 2).drop(MARKER)
     .write.mode("overwrite").parquet(str(scratch / "floor_rows")))
    keys = spark.read.parquet(*files).select("id")
    (spark.read.format("delta").load(str(table_path)).select("id")
     .join(F.broadcast(keys), "id", "left_semi").count())
    return time.perf_counter() - started


def spark_summary(spark, path: Path) -> tuple:
    from pyspark.sql import functions as F
    row = spark.read.format("delta").load(str(path)).agg(
        F.count("*"), F.sum("id"), F.sum("qty"), F.sum("version")).first()
    return tuple(int(v or 0) for v in row)


def deltalake_summary(path: Path) -> tuple:
    from deltalake import DeltaTable
    data = pa.RecordBatchReader.from_stream(DeltaTable(str(path)).scan()).read_all()
    return (data.num_rows,) + tuple(int(pc.sum(data.column(c)).as_py() or 0)
                                    for c in ("id", "qty", "version"))


# --- main ------------------------------------------------------------------------------------

def fmt_bytes(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="1.0 = 10M-row table, 1M changes (default 1.0)")
    parser.add_argument("--files", type=int, default=100, help="change files (default 100)")
    parser.add_argument("--baseline-files", type=int, default=None,
                        help="time per-file MERGE on only the first N files and extrapolate "
                             "(default: all files below scale 0.5, else 10)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", default=None, help="where data goes (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--skip-deltalake", action="store_true")
    parser.add_argument("--floor", action="store_true",
                        help="also time the Spark floor (c): the least work any Spark MERGE "
                             "of these changes must do, in the warm JVM")
    args = parser.parse_args(argv)

    base_rows = int(10_000_000 * args.scale)
    changes = int(1_000_000 * args.scale)
    baseline_files = args.baseline_files
    if baseline_files is None:
        baseline_files = args.files if args.scale < 0.5 else min(10, args.files)
    baseline_files = max(1, min(baseline_files, args.files))
    work = Path(args.workdir or tempfile.mkdtemp(prefix="mirror-bench-"))
    landing, warehouse = work / "landing", work / "warehouse"
    def out(text: str) -> None:
        print(text, flush=True)

    out(f"mirror_bench: scale {args.scale} — {base_rows:,} rows, {changes:,} changes "
        f"(60% update, 20% insert, 20% delete) in {args.files} Parquet files")
    out(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"master {args.master}, threads {args.threads}")
    try:
        t0 = time.perf_counter()
        base, paths = generate(landing / TABLE, work / "changes", base_rows, changes, args.files,
                               args.seed)
        out(f"generated data in {time.perf_counter() - t0:.1f} s ({work})")

        from mirrorspec.spark.platform.session import build_session
        spark = build_session(args.master, {"spark.driver.memory": args.driver_memory},
                              app_name="mirror-bench")
        # initial load: only file 1 is in the landing zone yet
        t0 = time.perf_counter()
        with PeakMemory() as mem:
            engine_pass(spark, landing, warehouse, args.threads)
        load_s = time.perf_counter() - t0
        out(f"initial load (engine, append): {load_s:.1f} s, {base_rows / load_s:,.0f} rows/s, "
            f"peak RSS {fmt_bytes(mem.peak)}")
        table_path = warehouse / "dbo" / TABLE
        baseline_path = work / "baseline_merge"
        shutil.copytree(table_path, baseline_path)
        for path in paths:  # the engine moves what it applied: it gets copies
            shutil.copy2(path, landing / TABLE / path.name)

        t0 = time.perf_counter()
        with PeakMemory() as mem:
            result = engine_pass(spark, landing, warehouse, args.threads)
        engine_s = time.perf_counter() - t0
        outcome = result.tables[0]
        out(f"engine pass: {engine_s:.1f} s for {len(outcome.files_applied)} files, "
            f"{changes / engine_s:,.0f} changes/s, peak RSS (Python + JVM) {fmt_bytes(mem.peak)}; "
            f"inserted {outcome.rows_inserted:,}, updated {outcome.rows_updated:,}, "
            f"deleted {outcome.rows_deleted:,}")
        engine_summary = spark_summary(spark, table_path)

        if not args.skip_baseline:
            t0 = time.perf_counter()
            with PeakMemory() as mem:
                merge_per_file(spark, baseline_path, paths[:baseline_files])
            measured = time.perf_counter() - t0
            per_file_s = measured * args.files / baseline_files
            note = "" if baseline_files == args.files else (
                f" (EXTRAPOLATED: {measured:.1f} s measured on the first {baseline_files} "
                f"files × {args.files}/{baseline_files})")
            out(f"(a) one MERGE per file: {per_file_s:.1f} s{note}, peak RSS "
                f"{fmt_bytes(mem.peak)} → engine is {per_file_s / engine_s:.1f}× faster")
            if baseline_files == args.files:
                same = spark_summary(spark, baseline_path) == engine_summary
                out(f"    per-file MERGE result equals the engine's: {'yes' if same else 'NO'}")

        if not args.skip_deltalake:
            from deltalake import write_deltalake
            rs_path = work / "deltalake_table"
            write_deltalake(str(rs_path), base)
            del base
            t0 = time.perf_counter()
            with PeakMemory() as mem:
                deltalake_merge(rs_path, paths)
            rs_s = time.perf_counter() - t0
            verdict = (f"engine is {rs_s / engine_s:.2f}× faster" if rs_s >= engine_s
                       else f"engine is {engine_s / rs_s:.2f}× SLOWER")
            out(f"(b) deltalake (delta-rs) net-fold MERGE: {rs_s:.1f} s, peak RSS "
                f"{fmt_bytes(mem.peak)} (includes the idle JVM) → {verdict}")
            same = deltalake_summary(rs_path) == engine_summary
            out(f"    delta-rs result equals the engine's: {'yes' if same else 'NO'}")
        if args.floor:
            floor_s = spark_floor(spark, baseline_path, paths, work)
            versus = ""
            if not args.skip_deltalake:
                versus = (f"delta-rs ({rs_s:.1f} s) is {floor_s / rs_s:.2f}× faster than even "
                          "this floor" if rs_s < floor_s else
                          f"the floor is under delta-rs's {rs_s:.1f} s")
            out(f"(c) Spark floor (read + last change per key + write rows + key semi-join, "
                f"no Delta commit, warm JVM): {floor_s:.1f} s; the engine pass is "
                f"{engine_s / floor_s:.2f}× the floor{'; ' + versus if versus else ''}")
        out(f"engine table: {engine_summary[0]:,} rows")
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
