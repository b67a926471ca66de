"""End-to-end benchmark: CDC feed → landing zone → Delta table, through `run_plan`.

The same feeds as bench/publish_bench.py (at --scale 1.0, 1M Qlik Replicate messages and 1M
Arcion realtime CSV rows), published and mirrored by one `mirrorspec run` equivalent
(`mirrorspec.spark.run.run_plan`, tables in parallel) in one warm SparkSession. The figure is
changes/s from "feed files present" to "rows committed in Delta"; the result is checked against
the row count the generator expects, so a fast wrong answer can't pass unseen.

    .venv/bin/python bench/e2e_bench.py --scale 0.1 [--json]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuTime, PeakMemory, emit, fmt_bytes, machine, rate, spark_session, timed
from publish_bench import TABLES, compile_plan, generate_project


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M changes per feed")
    parser.add_argument("--feeds", default="qlik,arcion")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args(argv)
    changes = max(100, int(1_000_000 * args.scale))
    feeds = tuple(f.strip() for f in args.feeds.split(",") if f.strip())
    work = Path(args.workdir or tempfile.mkdtemp(prefix="mirrorspec-e2e-bench-"))
    figures: dict = {"bench": "e2e", "scale": args.scale, "changes_per_feed": changes,
                     "feeds": list(feeds), "machine": machine()}
    try:
        root = work / "project"
        expected = generate_project(root, changes, args.master, feeds)
        plan = compile_plan(root)
        spark = spark_session(args.master, args.driver_memory, app_name="e2e-bench")
        spark.range(1).count()  # JVM and session up before the clock starts
        from mirrorspec.spark.run import run_plan

        with PeakMemory() as memory, CpuTime() as cpu, timed() as clock:
            results = run_plan(plan, threads=args.threads, spark=spark)
        if results.failed:
            raise SystemExit("e2e run failed: " + "; ".join(
                f"{r.unique_id}: {r.error}" for r in results.results if r.failed))
        total = changes * len(feeds)
        figures.update({"seconds": round(clock.seconds, 2),
                        "changes_per_s": rate(total, clock.seconds),
                        "cpu_s": round(cpu.seconds, 2),
                        "changes_per_cpu_s": rate(total, cpu.seconds),
                        "peak_rss": fmt_bytes(memory.peak)})
        correct = True
        for feed in feeds:
            table = next(t for t in plan.tables if t.name == TABLES[feed])
            rows = spark.read.format("delta").load(table.delta_path).count()
            figures[f"{feed}_rows"] = rows
            correct &= rows == expected[feed]
        figures["correct"] = correct
        if not args.json:
            print(f"e2e: {total:,} changes ({', '.join(feeds)}) feed → Delta in "
                  f"{clock.seconds:.1f} s = {total / clock.seconds:,.0f} changes/s, peak RSS "
                  f"{fmt_bytes(memory.peak)}; row counts as expected: {'yes' if correct else 'NO'}")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
