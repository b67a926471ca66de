"""Scaling benchmark: the mirror benchmark at 1×, 2×, 4×, 8× a base size.

Uses bench/mirror_bench.py's data (a table of 10M·s rows, then 1M·s changes — 60% updates, 20%
inserts, 20% deletes — in --files Parquet files) and its engine pass, at s = base × 1, 2, 4, 8,
all in one warm SparkSession. For each size it reports the initial load and the change pass
(the figure that matters), then how time grows with size:

- exponent: the slope of log(time) over log(size) between the two largest sizes (1.0 = linear;
  fixed costs make small sizes look sub-linear, so the largest sizes are the honest ones), for
  wall time and for the CPU time of the process tree (steadier on a shared machine),
- per-unit ratio: (time per change at 8×) / (time per change at 1×) (≤ 1 = no worse than linear).

    .venv/bin/python bench/scaling_bench.py --scale 0.01 [--json]   # base 100k rows / 10k changes
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuTime, PeakMemory, emit, fmt_bytes, machine, print_table, rate, spark_session, timed

FACTORS = (1, 2, 4, 8)


def measure(spark, work: Path, scale: float, files: int, threads: int, seed: int) -> dict:
    """Generate one size, load it, and time the engine's change pass."""
    import mirror_bench as mb

    base_rows, changes = int(10_000_000 * scale), int(1_000_000 * scale)
    landing, warehouse = work / "landing", work / "warehouse"
    # mirror_bench writes the initial load into the landing table and the change files aside
    _, paths = mb.generate(landing / mb.TABLE, work / "changes", base_rows, changes, files, seed)
    with timed() as load:
        mb.engine_pass(spark, landing, warehouse, threads)
    for path in paths:
        shutil.copy2(path, landing / mb.TABLE / path.name)
    with PeakMemory() as memory, CpuTime() as cpu, timed() as clock:
        result = mb.engine_pass(spark, landing, warehouse, threads)
    applied = len(result.tables[0].files_applied)
    if applied != files:
        raise SystemExit(f"scale {scale}: the engine applied {applied} of {files} files")
    return {"scale": scale, "rows": base_rows, "changes": changes,
            "load_s": round(load.seconds, 2), "pass_s": round(clock.seconds, 2),
            "pass_cpu_s": round(cpu.seconds, 2),
            "changes_per_s": rate(changes, clock.seconds), "peak_rss": fmt_bytes(memory.peak)}


def _exponent(small: dict, big: dict, key: str) -> float | None:
    if small[key] <= 0 or big[key] <= 0 or big["changes"] <= small["changes"]:
        return None
    return round(math.log(big[key] / small[key]) / math.log(big["changes"] / small["changes"]), 2)


def linearity(points: list[dict]) -> dict:
    """Growth of the change pass with size: the log-log slope between the two largest sizes
    (wall and CPU time; 1.0 = linear) and the per-change wall time ratio largest/smallest."""
    small, prev, big = points[0], points[-2], points[-1]
    per_unit = ((big["pass_s"] / big["changes"]) / (small["pass_s"] / small["changes"])
                if small["pass_s"] > 0 else None)
    return {"exponent": _exponent(prev, big, "pass_s"),
            "cpu_exponent": _exponent(prev, big, "pass_cpu_s"),
            "per_change_ratio": round(per_unit, 2) if per_unit is not None else None}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1,
                        help="the base size as mirror_bench scale (0.1 = 1M rows, 100k changes)")
    parser.add_argument("--factors", default=",".join(str(f) for f in FACTORS))
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args(argv)
    factors = [int(f) for f in args.factors.split(",")]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="mirrorspec-scaling-bench-"))
    points = []
    try:
        spark = spark_session(args.master, args.driver_memory, app_name="scaling-bench")
        spark.range(1).count()
        for factor in factors:
            point = measure(spark, work / f"x{factor}", args.scale * factor, args.files,
                            args.threads, args.seed)
            point["factor"] = factor
            points.append(point)
            shutil.rmtree(work / f"x{factor}", ignore_errors=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    figures = {"bench": "scaling", "base_scale": args.scale, "files": args.files,
               "points": points, **linearity(points), "machine": machine()}
    if not args.json:
        print_table(["size", "table rows", "changes", "load s", "change pass s", "pass CPU s",
                     "changes/s", "peak RSS"],
                    [[f"{p['factor']}×", f"{p['rows']:,}", f"{p['changes']:,}", p["load_s"],
                      p["pass_s"], p["pass_cpu_s"], f"{p['changes_per_s']:,.0f}", p["peak_rss"]]
                     for p in points])
        print(f"exponent (two largest sizes): wall {figures['exponent']}, CPU "
              f"{figures['cpu_exponent']}  "
              f"per-change time {factors[-1]}× vs {factors[0]}×: {figures['per_change_ratio']}")
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
