"""What Delta's change data feed costs a mirror pass: the same passes with it and without it.

Two cases, in one process and one SparkSession, each on two landing zones holding the very same
files: one mirrored with `change_data_feed` off, the other with it on.

- many small tables: --tables tables (default 20) of --rows rows (default 1,000) each, loaded by
  a first pass, then --rounds rounds (default 3) of --changes change rows per table (default 10:
  60% updates, 20% deletes, 20% new keys) and one pass over all tables;
- one big table: 30M rows × --scale, loaded by a first pass, then --rounds passes of one file of
  100k × --scale change rows (same mix). At --scale 1.0 that is the documented 100k changes into
  30M rows; the initial loads alone take long on a laptop, so try --scale 0.01 first.

--warmup rounds (default 1) run first and are not counted. The two zones' passes alternate
(off, on, then on, off, …) so a drift of the shared machine
hits both alike. It prints per case the median wall and CPU seconds (this process tree) of a
changes pass with the feed off and on, their ratios, the bytes of `_change_data` the feed wrote
and the load average before and after — timings on a shared machine are noise, the ratios of
one run are what to read. Both zones' tables are compared at the end (row count and a checksum)
and the feed's rows counted against the changes, so a fast wrong answer can't pass unseen.

    .venv/bin/python bench/cdf_bench.py --scale 0.01 [--tables 20] [--rounds 3] [--json]
    .venv/bin/python bench/cdf_bench.py --skip-small --scale 1.0   # the documented big case
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CpuTime, Timer, machine

MARKER = "__rowMarker__"


def base_rows(rng: np.random.Generator, ids: np.ndarray, version: int) -> dict[str, pa.Array]:
    n = len(ids)
    return {"id": pa.array(ids, pa.int64()),
            "qty": pa.array(rng.integers(0, 1000, n), pa.int64()),
            "amount": pa.array(np.round(rng.random(n) * 1000, 2), pa.float64()),
            "version": pa.array(np.full(n, version), pa.int32())}


class Table:
    """One table's landing folder in both zones, and the keys it holds."""

    def __init__(self, zones: tuple[Path, Path], name: str, rows: int, rng):
        self.folders = [zone / name for zone in zones]
        self.rng, self.next_id, self.sequence = rng, rows, 1
        self.live = np.arange(rows, dtype=np.int64)
        for folder in self.folders:
            folder.mkdir(parents=True)
            (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}\n')
        self._write(pa.table(base_rows(rng, self.live, 0)))

    def _write(self, table: pa.Table) -> None:
        for folder in self.folders:
            pq.write_table(table, folder / f"{self.sequence:020d}.parquet")
        self.sequence += 1

    def land_changes(self, count: int) -> int:
        """A change file of `count` rows (60% updates, 20% deletes, 20% new keys) in both
        zones; returns the change rows the feed must hold (a pre/post pair per update)."""
        n_upd, n_del = int(count * 0.6), int(count * 0.2)
        n_ins = count - n_upd - n_del
        touched = self.rng.choice(self.live, n_upd + n_del, replace=False)
        inserted = np.arange(self.next_id, self.next_id + n_ins, dtype=np.int64)
        self.next_id += n_ins
        ids = np.concatenate([touched[:n_upd], inserted, touched[n_upd:]])
        columns = base_rows(self.rng, ids, self.sequence)
        columns[MARKER] = pa.array(np.concatenate(
            [np.full(n_upd, 1), np.zeros(n_ins), np.full(n_del, 2)]), pa.int32())
        self._write(pa.table(columns))
        self.live = np.concatenate([np.setdiff1d(self.live, touched[n_upd:]), inserted])
        return 2 * n_upd + n_ins + n_del


def mirror(spark, zone: Path, warehouse: Path, feed: bool) -> None:
    from mirrorspec.spark.mirror import engine

    targets = [replace(t, change_data_feed=feed)
               for t in engine.discover_targets(str(zone), str(warehouse), spark)]
    result = engine.mirror_tables(spark, targets, str(warehouse), engine.MirrorOptions(threads=2))
    failed = [t.error for t in result.tables if t.status == "Failed"]
    if failed:
        raise SystemExit(f"the engine failed: {failed}")


def change_bytes(warehouse: Path) -> int:
    return sum(f.stat().st_size for f in warehouse.rglob("_change_data/*") if f.is_file())


def feed_rows(warehouse: Path, since: int) -> int:
    from deltalake import DeltaTable

    total = 0
    for log in warehouse.glob("*/*/_delta_log"):
        table = DeltaTable(str(log.parent))
        total += pa.table(table.load_cdf(starting_version=since)).num_rows
    return total


def checksum(warehouse: Path) -> list[tuple]:
    from deltalake import DeltaTable, QueryBuilder

    out = []
    for log in sorted(warehouse.glob("*/*/_delta_log")):
        query = QueryBuilder().register("t", DeltaTable(str(log.parent)))
        row = pa.RecordBatchReader.from_stream(query.execute(
            "SELECT count(*) AS n, sum(id) AS ids, sum(qty) AS qty FROM t")).read_all()
        out.append((log.parent.name, *row.to_pylist()[0].values()))
    return out


def run_case(spark, root: Path, name: str, tables: int, rows: int, changes: int,
             rounds: int, warmup: int, seed: int, out) -> dict:
    zones = (root / name / "off" / "landing", root / name / "on" / "landing")
    warehouses = (root / name / "off" / "warehouse", root / name / "on" / "warehouse")
    rng = np.random.default_rng(seed)
    landed = [Table(zones, f"t{i:03d}", rows, rng) for i in range(tables)]
    for zone, warehouse, feed in zip(zones, warehouses, (False, True)):
        with Timer() as load:
            mirror(spark, zone, warehouse, feed)
        out(f"  {name}: initial load, feed {'on ' if feed else 'off'}: {load.seconds:.1f} s")
    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    expected = 0
    for number in range(-warmup, rounds):
        expected += sum(t.land_changes(changes) for t in landed)
        order = (False, True) if number % 2 == 0 else (True, False)
        for feed in order:
            with Timer() as wall, CpuTime() as cpu:
                mirror(spark, zones[feed], warehouses[feed], feed)
            if number < 0:
                out(f"  {name}: warm-up round, feed {'on ' if feed else 'off'}: "
                    f"{wall.seconds:.2f} s (not counted)")
                continue
            times[feed].append((wall.seconds, cpu.seconds))
            out(f"  {name}: round {number + 1}, feed {'on ' if feed else 'off'}: "
                f"{wall.seconds:.2f} s wall, {cpu.seconds:.2f} s CPU")
    if checksum(warehouses[0]) != checksum(warehouses[1]):
        raise SystemExit(f"{name}: the two zones' tables differ")
    found = feed_rows(warehouses[1], 1)
    if found != expected:
        raise SystemExit(f"{name}: the feed holds {found} change rows, the changes make {expected}")
    figures = {}
    for feed in (False, True):
        figures["on" if feed else "off"] = {
            "wall_s": statistics.median(w for w, _ in times[feed]),
            "cpu_s": statistics.median(c for _, c in times[feed])}
    figures["wall_ratio"] = figures["on"]["wall_s"] / figures["off"]["wall_s"]
    figures["cpu_ratio"] = figures["on"]["cpu_s"] / figures["off"]["cpu_s"]
    figures["change_data_bytes"] = change_bytes(warehouses[1])
    figures["feed_rows"] = found
    figures["data_bytes"] = sum(f.stat().st_size for f in warehouses[1].rglob("*.parquet")
                                if "_change_data" not in f.parts)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="the big table's size: 30M rows and 100k changes × scale")
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--rows", type=int, default=1000, help="rows of each small table")
    parser.add_argument("--changes", type=int, default=10, help="changes per small table")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1,
                        help="rounds run first and not counted (the JVM warming up)")
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--skip-small", action="store_true")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    def out(text: str) -> None:
        print(text, file=sys.stderr if args.json else sys.stdout, flush=True)

    from mirrorspec.spark.platform.session import build_session

    root = Path(args.workdir or tempfile.mkdtemp(prefix="cdf-bench-"))
    load_before = os.getloadavg()
    spark = build_session(args.master, {"spark.sql.shuffle.partitions": "4"})
    results: dict = {"machine": machine(), "load_before": load_before}
    try:
        if not args.skip_small:
            out(f"{args.tables} tables of {args.rows} rows, {args.changes} changes each a pass")
            results["small"] = run_case(spark, root, "small", args.tables, args.rows,
                                        args.changes, args.rounds, args.warmup, args.seed,
                                        out)
        if not args.skip_big:
            rows, changes = int(30_000_000 * args.scale), max(10, int(100_000 * args.scale))
            out(f"1 table of {rows:,} rows, {changes:,} changes a pass")
            results["big"] = run_case(spark, root, "big", 1, rows, changes, args.rounds,
                                      args.warmup, args.seed + 1, out)
            results["big"].update(rows=rows, changes=changes)
    finally:
        results["load_after"] = os.getloadavg()
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    for case in ("small", "big"):
        if case in results:
            r = results[case]
            out(f"{case}: feed off {r['off']['wall_s']:.2f} s, on {r['on']['wall_s']:.2f} s "
                f"(wall ×{r['wall_ratio']:.2f}, CPU ×{r['cpu_ratio']:.2f}); _change_data "
                f"{r['change_data_bytes']:,} bytes for {r['feed_rows']:,} change rows")
    out(f"load average before {load_before[0]:.1f}, after {results['load_after'][0]:.1f}")
    if args.json:
        print(json.dumps(results, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
