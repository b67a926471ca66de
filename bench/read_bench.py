"""Read-path benchmark: `show`, `history` and `status` as cold processes on a local
Delta table, through delta-rs (today) and through Spark (MIRRORSPEC_READ_WITH=spark, the path
before) in the same run.

Builds a table of 1M rows × --scale (written by delta-spark in 10 files, then a DELETE and an
UPDATE that leave deletion vectors, as mirrored tables have), a one-table project over it and
the monitoring JSON; then times each command as its own `python -m mirrorspec …` process,
--repeat times, and prints the median beside the Spark path's and the ratio. `status` never
started Spark (it reads JSON); it is timed for completeness. Target: each read under 2 s.

    .venv/bin/python bench/read_bench.py [--scale 1] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_ROOT, emit, machine, print_table, spark_session, timed

COMMANDS = {
    "show": ["show", "sales.orders"],
    "show --where": ["show", "sales.orders", "--where", "status = 'open' AND amount > 900"],
    "show --version 0": ["show", "sales.orders", "--version", "0"],
    "history": ["history", "sales.orders"],
    "status": ["status"],
}
SPARK_READS = ("show", "show --where", "show --version 0", "history")


def build_table(work: Path, rows: int) -> Path:
    """WORK/warehouse/sales/orders with deletion vectors, and the project reading it."""
    spark = spark_session()
    path = work / "warehouse" / "sales" / "orders"
    frame = spark.range(rows).selectExpr(
        "id", "concat('customer ', id % 5000) AS customer",
        "CAST(id % 1000 AS DOUBLE) AS amount",
        "CASE WHEN id % 3 = 0 THEN 'open' ELSE 'closed' END AS status",
        "TIMESTAMP '2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS updated_at")
    frame.repartition(10).write.format("delta").save(str(path))
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 97 = 0")
    spark.sql(f"UPDATE delta.`{path}` SET status = 'open' WHERE id % 89 = 0")
    spark.stop()
    project = work / "shop"
    (project / "tables").mkdir(parents=True)
    (project / "mirrorspec_project.yml").write_text("name: shop\nversion: '1'\n")
    (project / "profiles.yml").write_text(
        f"shop:\n  outputs:\n    default:\n      landing_zone: landing\n"
        f"      warehouse: {work / 'warehouse'}\n      spark:\n        master: local[2]\n")
    (project / "tables" / "orders.yml").write_text(
        "tables:\n  - name: orders\n    schema: sales\n    key_columns: [id]\n")
    (work / "warehouse" / "tables.json").write_text(json.dumps({"tables": [{
        "sourceSchemaName": "sales", "sourceTableName": "orders", "status": "Replicating",
        "metrics": {"processedRows": rows, "processedBytes": 0,
                    "lastSyncDateTime": "2026-01-01T00:00:00Z", "lastSyncLatencyInSeconds": 1},
        "error": None}]}))
    (work / "warehouse" / "replicator.json").write_text(json.dumps({"status": "Running"}))
    return project


def cold(args: list[str], project: Path, spark: bool) -> tuple[float, float]:
    """(wall s, CPU s) of one `mirrorspec ARGS` process (exit 0 required). CPU seconds are the
    process's own (user + system; a JVM's when it starts one) and barely move with load."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MIRRORSPEC_SPARK_LOG_LEVEL="ERROR",
               COLUMNS="120")
    if spark:
        env["MIRRORSPEC_READ_WITH"] = "spark"
    before = _children_cpu()
    with timed() as timer:
        done = subprocess.run([sys.executable, "-m", "mirrorspec", *args, "--project-dir",
                               str(project)], capture_output=True, text=True, env=env,
                              cwd=str(project))
    if done.returncode != 0:
        raise SystemExit(f"mirrorspec {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    if spark != ("reading with Spark" in done.stdout + done.stderr) and args[0] != "status":
        raise SystemExit(f"mirrorspec {' '.join(args)}: unexpected reader:\n{done.stderr}")
    return timer.seconds, _children_cpu() - before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="rows = 1,000,000 × scale")
    parser.add_argument("--repeat", type=int, default=3, help="cold runs per command (median)")
    parser.add_argument("--spark-repeat", type=int, default=1,
                        help="cold runs per command on the Spark path")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args(argv)
    rows = max(1000, int(1_000_000 * args.scale))
    work = Path(args.workdir or tempfile.mkdtemp(prefix="mirrorspec-read-bench-"))
    info = machine()
    print(f"read bench: {rows:,}-row table with deletion vectors in {work}; load average "
          f"{info.get('load_average', 0):.1f} on {info.get('cpus')} CPUs", flush=True)
    project = build_table(work, rows)
    floor = statistics.median(cold_version() for _ in range(args.repeat))
    figures: dict = {"rows": rows, "floor_s": round(floor, 3), "commands": {},
                     "load_average": info.get("load_average")}
    table = []
    for name, command in COMMANDS.items():
        fast, fast_cpu = _median([cold(command, project, False) for _ in range(args.repeat)])
        slow, slow_cpu = (_median([cold(command, project, True)
                                   for _ in range(args.spark_repeat)])
                          if name in SPARK_READS else (None, None))
        figures["commands"][name] = {
            "delta_rs_s": round(fast, 3), "delta_rs_cpu_s": round(fast_cpu, 3),
            "spark_s": round(slow, 3) if slow else None,
            "spark_cpu_s": round(slow_cpu, 3) if slow else None}
        table.append([name, f"{fast:.2f} s (CPU {fast_cpu:.2f} s)",
                      f"{slow:.1f} s (CPU {slow_cpu:.1f} s)" if slow else "(never Spark)",
                      f"{slow / fast:.0f}× faster" if slow else "-",
                      "yes" if fast < 2 else "NO"])
    print(f"`mirrorspec --version` (Python start-up floor): {floor:.2f} s")
    print_table(["command", "delta-rs", "Spark path", "ratio", "< 2 s"], table)
    emit(figures, args.json)
    return 0


def cold_version() -> float:
    with timed() as timer:
        subprocess.run([sys.executable, "-m", "mirrorspec", "--version"], capture_output=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)), check=True)
    return timer.seconds


if __name__ == "__main__":
    raise SystemExit(main())
