"""Does a mirror pass cost what its batch costs? The big-batch table of docs/performance.md, side by side in one run.

  (a) tiny batch: 1k changes into a 1M-row table, as whole commands (`mirrorspec mirror`, a cold
      JVM) beside a bare PySpark process that starts with Delta's jars and counts the table;
      the ratio of the two (wall and CPU seconds of each process tree). The same count through
      mirrorspec's own session (its conf and JVM class-data archive) is shown too.
  (b) the same batch (100k changes, 10 files) into tables of 3M and 30M rows, each pass timed in
      one warm session, beside delta-rs MERGE of the same changes (net fold, one MERGE) on a
      copy of the table before the pass; the ratio between the two sizes says whether the cost
      follows the batch (1.0) or the table (10.0). A throw-away small pass runs first so that
      neither size pays the JIT warm-up of the MERGE code paths.
  (c) initial load: the 30M rows landed as one Parquet file → Delta through the engine, beside
      `pyarrow.parquet.read_table` + `deltalake.write_deltalake` of the same file, with the data
      files each wrote (count, sizes).
  (d) peak RSS of the process tree per case.
  (e) 1M changes (100 files) into 10M rows as a whole `mirror` command, minus the bare start
      counting the table, against delta-rs's MERGE of the same changes (`--skip-whole` skips it).
  (f) warm passes of 1k changes into a 1M-row table, as `run --watch` makes them (the snapshot
      kept warm between passes), alternating with a plain Delta MERGE (`DeltaTable.merge`, one
      delete/update/insert clause each, a Parquet file as its source) of another 1k-change batch
      into the same table: the floor any Spark MERGE-based pass stands on (the target for
      the pass: ≤ 1.5 s). Medians without the first of each (`--warm-passes 0` skips it).

Besides wall time it reports CPU seconds of the process tree (driver + JVM + workers), which
barely move when other work shares the machine; read wall figures only from an idle machine.

    .venv/bin/python bench/batch_bench.py --scale 0.01      # small: a few minutes
    .venv/bin/python bench/batch_bench.py --scale 1.0       # the documented sizes (~20 GiB of disk)
"""

from __future__ import annotations

import argparse
import os
import statistics
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (REPO_ROOT, CpuTime, PeakMemory, emit, print_table, run_tree,
                     spark_session)
from mirror_bench import TABLE, deltalake_merge, generate

# The reference: plain PySpark started with Delta's jars, nothing of mirrorspec's.
BARE_COUNT = """
import sys
from pyspark.sql import SparkSession
from mirrorspec.spark.platform import jars
spark = (SparkSession.builder.master("local[2]").appName("bare")
         .config("spark.jars", ",".join(str(p) for p in jars.cached_jars()))
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog",
                 "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .config("spark.driver.memory", "4g").getOrCreate())
print(spark.read.format("delta").load(sys.argv[1]).count())
spark.stop()
"""

# The same count through mirrorspec's session (its conf and the JVM class-data archive, when
# `make` created one): how much of the difference is the start rather than the pass.
SESSION_COUNT = """
import sys
from mirrorspec.spark.platform.session import build_session
spark = build_session("local[2]", {}, app_name="bare")
print(spark.read.format("delta").load(sys.argv[1]).count())
spark.stop()
"""


def data_files(table: Path) -> dict:
    """The Parquet data files a Delta table folder holds: count, total, smallest, largest."""
    sizes = [p.stat().st_size for p in table.rglob("*.parquet") if "_delta_log" not in p.parts]
    return {"files": len(sizes), "bytes": sum(sizes), "min": min(sizes, default=0),
            "max": max(sizes, default=0)}


def run_process(argv: list[str]) -> dict:
    """Wall and CPU seconds and peak RSS of one command's process tree."""
    figures, _, output = run_tree(argv, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    return dict(figures, output=output)


def engine_pass(spark, landing: Path, warehouse: Path) -> dict:
    """One warm `mirror_landing_zone` pass: wall, CPU of the process tree, peak RSS."""
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone

    started = time.perf_counter()
    with CpuTime() as cpu, PeakMemory() as memory:
        result = mirror_landing_zone(spark, str(landing), str(warehouse), MirrorOptions())
    if result.failed:
        raise SystemExit(f"engine failed: {[t.error for t in result.tables if t.error]}")
    return {"wall_s": round(time.perf_counter() - started, 2), "cpu_s": round(cpu.seconds, 2),
            "peak_rss": memory.peak}


def timed_python(work) -> dict:
    started = time.perf_counter()
    with CpuTime() as cpu, PeakMemory() as memory:
        work()
    return {"wall_s": round(time.perf_counter() - started, 2), "cpu_s": round(cpu.seconds, 2),
            "peak_rss": memory.peak}


def land(paths: list[Path], table_folder: Path) -> None:
    for path in paths:
        shutil.copy2(path, table_folder / path.name)


def ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b > 0 else float("inf")


# --- the cases --------------------------------------------------------------------------------

def tiny_batch(spark, work: Path, rows: int, changes: int) -> dict:
    landing, warehouse = work / "tiny" / "landing", work / "tiny" / "warehouse"
    _, paths = generate(landing / TABLE, work / "tiny" / "changes", rows, changes, 1, seed=1)
    engine_pass(spark, landing, warehouse)  # the initial load, in this warm session
    land(paths, landing / TABLE)
    table = warehouse / "dbo" / TABLE
    bare = run_process([sys.executable, "-c", BARE_COUNT, str(table)])
    session = run_process([sys.executable, "-c", SESSION_COUNT, str(table)])
    mirror = run_process([sys.executable, "-m", "mirrorspec", "mirror", "--landing-zone",
                          str(landing), "--warehouse", str(warehouse), "--master", "local[2]",
                          "--threads", "1", "-q"])
    return {"rows": rows, "changes": changes, "mirror": mirror, "bare": bare, "session": session,
            "ratio_wall": ratio(mirror["wall_s"], bare["wall_s"]),
            "ratio_cpu": ratio(mirror["cpu_s"], bare["cpu_s"]),
            "session_ratio_wall": ratio(mirror["wall_s"], session["wall_s"])}


def whole_command(spark, work: Path, rows: int, changes: int, files: int) -> dict:
    """`changes` in `files` files into `rows`: the `mirror` command (a fresh JVM) minus a bare
    start counting the table, against delta-rs's MERGE of the same changes (target: ≤ 3×)."""
    name = f"whole-n{rows}-c{changes}-f{files}"
    landing, warehouse = work / name / "landing", work / name / "warehouse"
    _, paths = generate(landing / TABLE, work / name / "changes", rows, changes, files, seed=3)
    engine_pass(spark, landing, warehouse)  # the initial load, in this warm session
    table = warehouse / "dbo" / TABLE
    before = work / name / "before"
    shutil.copytree(table, before)
    land(paths, landing / TABLE)
    bare = run_process([sys.executable, "-c", BARE_COUNT, str(table)])
    mirror = run_process([sys.executable, "-m", "mirrorspec", "mirror", "--landing-zone",
                          str(landing), "--warehouse", str(warehouse), "--master", "local[2]",
                          "--threads", "1", "-q"])
    delta_rs = timed_python(lambda: deltalake_merge(before, paths))
    net = round(mirror["wall_s"] - bare["wall_s"], 2)
    return {"rows": rows, "changes": changes, "files": files, "mirror": mirror, "bare": bare,
            "deltalake": delta_rs, "net_s": net, "ratio_wall": ratio(net, delta_rs["wall_s"])}


def warm_passes(spark, work: Path, rows: int, changes: int, passes: int) -> dict:
    """`passes` warm engine passes of `changes` each into `rows`, alternating with plain Delta
    MERGEs of as many changes into the same table (case f)."""
    from delta.tables import DeltaTable

    from mirrorspec.spark.mirror.warm import warm_snapshot

    name = f"warm-n{rows}-c{changes}"
    landing, warehouse = work / name / "landing", work / name / "warehouse"
    _, paths = generate(landing / TABLE, work / name / "changes", rows, changes * 2 * passes,
                        2 * passes, seed=4)
    engine_pass(spark, landing, warehouse)  # the initial load
    table = str(warehouse / "dbo" / TABLE)
    columns = spark.read.format("delta").load(table).columns
    values = {c: f"s.`{c}`" for c in columns}

    def engine(index: int, path: Path) -> float:
        # the engine's files are consecutive sequence numbers; the plain MERGE's are not landed
        shutil.copy2(path, landing / TABLE / f"{index + 2:020d}.parquet")
        return engine_pass(spark, landing, warehouse)["wall_s"]

    def plain(path: Path) -> float:
        source = spark.read.parquet(str(path))
        started = time.perf_counter()
        (DeltaTable.forPath(spark, table).alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedDelete(condition="s.__rowMarker__ = 2")
         .whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(condition="s.__rowMarker__ != 2", values=values)
         .execute())
        return round(time.perf_counter() - started, 2)

    runs: dict[str, list[float]] = {"engine": [], "plain": []}
    for index in range(passes):
        order = ("engine", "plain") if index % 2 == 0 else ("plain", "engine")
        for case in order:
            warm_snapshot(spark, table)  # what `run --watch` does after each commit
            runs[case].append(engine(index, paths[2 * index]) if case == "engine"
                              else plain(paths[2 * index + 1]))
    medians = {case: round(statistics.median(times[1:] or times), 2) for case, times in runs.items()}
    return {"rows": rows, "changes": changes, "passes": passes, "runs": runs,
            "engine_median_s": medians["engine"], "plain_median_s": medians["plain"],
            "ratio_wall": ratio(medians["engine"], medians["plain"])}


def batch_into(spark, work: Path, rows: int, changes: int, files: int) -> dict:
    """Initial load of `rows`, then `changes` in `files` files: engine pass vs delta-rs."""
    from deltalake import write_deltalake

    name = f"n{rows}-c{changes}-f{files}"
    landing, warehouse = work / name / "landing", work / name / "warehouse"
    _, paths = generate(landing / TABLE, work / name / "changes", rows, changes, files, seed=2)
    base_file = landing / TABLE / f"{1:020d}.parquet"
    reference = work / name / "reference"  # the base file, read and written by delta-rs
    shutil.copy2(base_file, work / name / "base.parquet")
    table = warehouse / "dbo" / TABLE
    initial = engine_pass(spark, landing, warehouse)
    initial["written"] = data_files(table)
    initial_ref = timed_python(lambda: write_deltalake(
        str(reference), pq.read_table(work / name / "base.parquet")))
    before = work / name / "before"
    shutil.copytree(table, before)
    land(paths, landing / TABLE)
    batch = engine_pass(spark, landing, warehouse)
    delta_rs = timed_python(lambda: deltalake_merge(before, paths))
    return {"rows": rows, "changes": changes, "files": files,
            "initial": initial,
            "initial_deltalake": dict(initial_ref, written=data_files(reference)),
            "batch": batch, "deltalake": delta_rs,
            "ratio_wall": ratio(batch["wall_s"], delta_rs["wall_s"]),
            "ratio_cpu": ratio(batch["cpu_s"], delta_rs["cpu_s"])}


# --- output -----------------------------------------------------------------------------------

def _time(case: dict) -> str:
    return f"{case['wall_s']:.1f} s (CPU {case['cpu_s']:.1f} s)"


def fmt_bytes(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _files(written: dict) -> str:
    return (f"{written['files']} files, {fmt_bytes(written['bytes'])} "
            f"({fmt_bytes(written['min'])}–{fmt_bytes(written['max'])})")


def table_rows(f: dict) -> list[list]:
    tiny, small, big = f["tiny"], f["small"], f["big"]
    rows = [
        ["tiny batch", f"{tiny['changes']:,} changes → {tiny['rows']:,} rows, `mirror` command",
         _time(tiny["mirror"]), fmt_bytes(tiny["mirror"]["peak_rss"]), ""],
        ["  bare start", "plain PySpark + Delta jars, count the table", _time(tiny["bare"]),
         fmt_bytes(tiny["bare"]["peak_rss"]),
         f"mirror/bare {tiny['ratio_wall']} wall, {tiny['ratio_cpu']} CPU (target ≤ 1.2)"],
        ["  mirrorspec start", "the same count through mirrorspec's session",
         _time(tiny["session"]), fmt_bytes(tiny["session"]["peak_rss"]),
         f"mirror/this {tiny['session_ratio_wall']} wall"],
    ]
    for case in (small, big):
        rows += [
            ["batch", f"{case['changes']:,} changes ({case['files']} files) → {case['rows']:,} "
                      "rows, warm pass", _time(case["batch"]), fmt_bytes(case["batch"]["peak_rss"]),
             ""],
            ["  delta-rs MERGE", "same changes, net fold, one MERGE", _time(case["deltalake"]),
             fmt_bytes(case["deltalake"]["peak_rss"]),
             f"engine/delta-rs {case['ratio_wall']} wall, {case['ratio_cpu']} CPU"],
        ]
    rows.append(["  big/small", f"{big['rows'] // small['rows']}× the rows, same batch",
                 "", "", f"{f['size_ratio_wall']} wall, {f['size_ratio_cpu']} CPU "
                         "(target ≤ 1.5)"])
    rows += [
        ["initial load", f"{big['rows']:,} rows, one Parquet file → Delta (engine)",
         _time(big["initial"]), fmt_bytes(big["initial"]["peak_rss"]),
         _files(big["initial"]["written"])],
        ["  pyarrow + delta-rs", "read_table + write_deltalake", _time(big["initial_deltalake"]),
         fmt_bytes(big["initial_deltalake"]["peak_rss"]), _files(big["initial_deltalake"]["written"])],
    ]
    whole = f.get("whole")
    if whole:
        rows += [
            ["whole command", f"{whole['changes']:,} changes ({whole['files']} files) → "
                              f"{whole['rows']:,} rows, `mirror`", _time(whole["mirror"]),
             fmt_bytes(whole["mirror"]["peak_rss"]), f"beyond the bare start: {whole['net_s']} s"],
            ["  bare start", "plain PySpark + Delta jars, count the table", _time(whole["bare"]),
             fmt_bytes(whole["bare"]["peak_rss"]), ""],
            ["  delta-rs MERGE", "same changes, net fold, one MERGE", _time(whole["deltalake"]),
             fmt_bytes(whole["deltalake"]["peak_rss"]),
             f"(mirror − bare)/delta-rs {whole['ratio_wall']} (target ≤ 3)"],
        ]
    warm = f.get("warm")
    if warm:
        rows += [
            ["warm passes", f"{warm['changes']:,} changes → {warm['rows']:,} rows, "
                            f"{warm['passes']} passes, snapshot warm",
             f"median {warm['engine_median_s']} s", "", "target ≤ 1.5 s"],
            ["  plain Delta MERGE", "another batch each time, same table, alternating",
             f"median {warm['plain_median_s']} s", "", f"engine/MERGE {warm['ratio_wall']}"],
        ]
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="1.0 = the documented sizes: 1k into 1M; 100k into 3M and 30M rows")
    parser.add_argument("--files", type=int, default=10, help="change files of case (b)")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temp folder)")
    parser.add_argument("--json", action="store_true", help="last line: the figures as JSON")
    parser.add_argument("--skip-whole", action="store_true",
                        help="skip case (e): 1M changes into 10M rows as a whole command")
    parser.add_argument("--warm-passes", type=int, default=8,
                        help="passes of case (f), 1k changes into 1M rows (0 skips it)")
    args = parser.parse_args(argv)
    scaled = lambda n: max(int(n * args.scale), 1000)  # noqa: E731
    work = Path(args.work or tempfile.mkdtemp(prefix="mirrorspec-batch-"))
    spark = spark_session()
    spark.range(1).count()
    try:
        tiny = tiny_batch(spark, work, scaled(1_000_000), 1000)
        # a throw-away MERGE pass, so neither size pays the JIT warm-up of the MERGE code paths
        batch_into(spark, work, 5000, 500, 2)
        figures = {"scale": args.scale, "tiny": tiny,
                   "small": batch_into(spark, work, scaled(3_000_000), scaled(100_000), args.files),
                   "big": batch_into(spark, work, scaled(30_000_000), scaled(100_000), args.files)}
        if args.warm_passes:
            figures["warm"] = warm_passes(spark, work, scaled(1_000_000), 1000, args.warm_passes)
        if not args.skip_whole:
            figures["whole"] = whole_command(spark, work, scaled(10_000_000), scaled(1_000_000),
                                             100)
    finally:
        spark.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    for case in ("tiny", "whole"):
        for run in ("mirror", "bare", "session"):
            figures.get(case, {}).get(run, {}).pop("output", None)
    figures["size_ratio_wall"] = ratio(figures["big"]["batch"]["wall_s"],
                                       figures["small"]["batch"]["wall_s"])
    figures["size_ratio_cpu"] = ratio(figures["big"]["batch"]["cpu_s"],
                                      figures["small"]["batch"]["cpu_s"])
    if not args.json:
        print_table(["case", "workload", "time", "peak RSS", "ratio / files"], table_rows(figures))
    else:
        print_table(["case", "workload", "time", "peak RSS", "ratio / files"], table_rows(figures),
                    out=sys.stderr)
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
