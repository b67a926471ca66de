"""Many-tables benchmark: what one more table costs a `mirror` pass, beside plain MERGE loops.

For each T of --tables (default 1,10,50,200): T landing tables of --rows rows (one file each),
mirrored by a first `mirrorspec mirror` pass (the initial load), then a change file of --changes
rows per table (60% updates, 20% deletes, 20% new keys) and a second pass, timed as a whole
command and "beyond the Spark start" (from the `Spark started` line to the exit). Beside it, in
the same run and on the same files:

- plain delta-spark: the T tables created beforehand (by delta-rs), then a child process with one
  SparkSession MERGEs each change file into its table (whenMatchedDelete / whenMatchedUpdate /
  whenNotMatchedInsert by marker), one table after the other; another child does the same on
  --plain-threads threads. Each is timed from its first MERGE (no JVM start; like mirrorspec's
  second pass, a fresh process whose Delta log cache is cold). Delta's own defaults: no
  deletion vectors, FIFO scheduling;
- delta-rs (the `deltalake` package, no JVM): the same MERGE loop, one table after the other.

With --loop, the loop itself: `mirror --watch 0.5` over the T tables, then a change file
landing in every table at once, twice; the seconds from the landing to the last table's commit
(the second round) give the loop's per-table slope, with each table's snapshot warmed between
passes as a running watcher keeps it.

With --warm-server, both passes also run through a warm Spark server (`mirrorspec spark start`
for a throw-away project whose profile names the landing zone and warehouse; started once,
before the first T, and not timed), as a `--watch` loop or a scheduler on one machine runs
them: "beyond the start" is then from the `using the warm Spark server` line to the exit.

It prints each figure per T, the per-table slope of each (least squares over the Ts) and the
ratios of mirrorspec's slope to the plain loops' — the figure that matters on a shared machine,
where absolute seconds are noise — with the load average before and after. The targets (idle
machine): mirrorspec's slope ≤ 0.8 × the sequential plain loop's and ≤ 1.0 × the threaded one's.

Then (unless --no-watch) watch latency: `mirror --watch` over 1 table and over --watch-tables
tables, --watch-files files landed one after another into one of them, p50/p95 from landing to
the commit carrying its sequence (bench/latency_bench.py's helpers); and (unless --no-history)
one pass over a table with 300 commits beside a fresh one (both made by delta-rs).

`nice` does not reach other process sessions on this kernel (autogroup): --autogroup-nice N
writes N to /proc/self/autogroup before anything starts (children inherit the group), which is
the one way a bench can win or yield the CPU; it is off by default and printed when used.

    .venv/bin/python bench/tables_bench.py --tables 1,10 [--threads 4] [--warm-server] [--loop] [--json]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_ROOT, PeakMemory, TreeCpu, emit, fmt_bytes, machine, print_table, tree_cpu_seconds

MARKER = "__rowMarker__"
_FINISHED = re.compile(r"\bOK (\S+): .* in ([\d.]+)s")


# --- data ---------------------------------------------------------------------------------------

def load_table(rows: int):
    import pyarrow as pa

    ids = list(range(rows))
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "payload": pa.array([f"row {i}" for i in ids]),
                     "amount": pa.array([i * 0.5 for i in ids], pa.float64()),
                     MARKER: pa.array([0] * rows, pa.int32())})


def change_table(rows: int, changes: int):
    """60% updates of existing keys, 20% deletes, 20% new keys (the mirror benches' mix)."""
    import pyarrow as pa

    updates, deletes = int(changes * 0.6), int(changes * 0.2)
    inserts = changes - updates - deletes
    step = max(1, rows // max(1, updates + deletes))
    old = [i * step % rows for i in range(updates + deletes)]
    ids = old + list(range(rows, rows + inserts))
    markers = [1] * updates + [2] * deletes + [0] * inserts
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "payload": pa.array([f"changed {i}" for i in ids]),
                     "amount": pa.array([i * 2.0 for i in ids], pa.float64()),
                     MARKER: pa.array(markers, pa.int32())})


def table_names(count: int) -> list[str]:
    return [f"t{i:04d}" for i in range(count)]


def land(landing: Path, names: list[str], sequence: int, data) -> None:
    import pyarrow.parquet as pq

    for name in names:
        folder = landing / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}\n', encoding="utf-8")
        temp = folder / f"_{sequence:020d}.tmp"
        pq.write_table(data, temp)
        os.rename(temp, folder / f"{sequence:020d}.parquet")


# --- mirrorspec, as whole commands -----------------------------------------------------------------

def run_mirror(landing: Path, warehouse: Path, master: str, threads: int | None,
               log: Path, code: str | None = None, project: Path | None = None) -> dict:
    """One `mirrorspec mirror` pass: wall seconds, seconds and CPU seconds (of the process tree)
    after `Spark started` (or `using the warm Spark server`), peak RSS of the process tree, exit
    code, each table's own seconds. `code`: another checkout to run instead (it is also the
    working folder: `python -m` looks there first). `project`: run in this project (made by
    `warm_project`, whose profile names `landing` and `warehouse`), on its warm Spark server."""
    command = [sys.executable, "-m", "mirrorspec", "mirror"]
    if project is not None:
        command += ["--project-dir", str(project)]
    else:
        command += ["--landing-zone", str(landing), "--warehouse", str(warehouse),
                    "--master", master]
    if threads:
        command += ["--threads", str(threads)]
    env = dict(os.environ, MIRRORSPEC_SPARK_LOG_LEVEL="ERROR", NO_COLOR="1")
    if code:  # another checkout's mirrorspec (--baseline)
        env["PYTHONPATH"] = code
    began = time.perf_counter()
    spark_up = None
    cpu_at_start = 0.0
    seconds: dict[str, float] = {}
    with open(log, "a", encoding="utf-8") as out:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   cwd=code or str(REPO_ROOT), env=env, text=True)
        cpu = TreeCpu(process.pid)
        cpu.start()
        with PeakMemory(process.pid) as memory:
            assert process.stdout is not None
            for line in process.stdout:
                out.write(line)
                if spark_up is None and ("Spark started" in line
                                         or "using the warm Spark server" in line):
                    spark_up = time.perf_counter()
                    cpu_at_start = cpu.seconds
                found = _FINISHED.search(line)
                if found:
                    seconds[found.group(1)] = float(found.group(2))
            process.wait()
    end = time.perf_counter()
    cpu.done.set()
    cpu.join()
    return {"wall": end - began, "beyond_start": end - (spark_up or began),
            "cpu_beyond_start": cpu.seconds - cpu_at_start,
            "peak_rss": memory.peak, "exit": process.returncode, "tables": seconds}


def warm_project(folder: Path, landing: Path, warehouse: Path, master: str) -> Path:
    """A project whose profile names `landing`, `warehouse` and `master` and nothing else, so
    `mirror` in it uses the warm Spark server `start_warm_server` started."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mirrorspec_project.yml").write_text('name: tables_bench\nversion: "1.0"\n',
                                                   encoding="utf-8")
    (folder / "profiles.yml").write_text(json.dumps({"tables_bench": {
        "target": "bench", "outputs": {"bench": {
            "landing_zone": str(landing), "warehouse": str(warehouse),
            "spark": {"master": master}}}}}) + "\n", encoding="utf-8")
    return folder


def warm_server(project: Path, action: str, log: Path) -> None:
    """`mirrorspec spark start` or `stop` for `project` (its output goes to the log)."""
    command = [sys.executable, "-m", "mirrorspec", "spark", action, "--project-dir", str(project)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=str(REPO_ROOT),
                          env=dict(os.environ, NO_COLOR="1"))
    with open(log, "a", encoding="utf-8") as out:
        out.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"mirrorspec spark {action} failed; see {log}")


# --- plain delta-spark, in a child process (its own JVM) --------------------------------------------

def plain_worker(args) -> None:
    """--plain-worker: create the tables, MERGE each change file, print one JSON line."""
    sys.path.insert(0, str(REPO_ROOT))
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from mirrorspec.spark.platform.session import build_session

    spark = build_session(args.master, {
        # Delta's own defaults, not mirrorspec's
        "spark.databricks.delta.properties.defaults.enableDeletionVectors": "false",
        "spark.scheduler.mode": "FIFO", "spark.sql.shuffle.partitions": "8"})
    landing, root = Path(args.landing), Path(args.plain_worker)
    names = sorted(p.name for p in landing.iterdir() if p.is_dir())

    def merge(name: str) -> None:
        source = spark.read.parquet(str(landing / name / f"{2:020d}.parquet"))
        (DeltaTable.forPath(spark, str(root / name)).alias("t")
         .merge(source.alias("s"), "t.id = s.id")
         .whenMatchedDelete(F.col(f"s.{MARKER}") == 2)
         .whenMatchedUpdate(set={c: f"s.{c}" for c in ("id", "payload", "amount")})
         .whenNotMatchedInsert(F.col(f"s.{MARKER}") != 2,
                               values={c: f"s.{c}" for c in ("id", "payload", "amount")})
         .execute())

    began, cpu = time.perf_counter(), tree_cpu_seconds()
    with ThreadPoolExecutor(max_workers=args.plain_threads) as pool:
        list(pool.map(merge, names))
    print(json.dumps({"seconds": time.perf_counter() - began,
                      "cpu": tree_cpu_seconds() - cpu}), flush=True)
    spark.stop()


def create_tables(landing: Path, root: Path) -> None:
    """The plain loops' tables, as file 1 leaves them (made by delta-rs: no JVM)."""
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    for folder in sorted(p for p in landing.iterdir() if p.is_dir()):
        first = pq.read_table(folder / f"{1:020d}.parquet").drop_columns([MARKER])
        write_deltalake(str(root / folder.name), first)


def run_plain(landing: Path, work: Path, master: str, threads: int, log: Path) -> dict:
    """Seconds and CPU seconds (process tree) of the plain delta-spark MERGE loop on `threads`
    threads (1: one after another)."""
    create_tables(landing, work)
    command = [sys.executable, __file__, "--plain-worker", str(work), "--landing", str(landing),
               "--master", master, "--plain-threads", str(threads)]
    env = dict(os.environ, MIRRORSPEC_SPARK_LOG_LEVEL="ERROR")
    done = subprocess.run(command, capture_output=True, text=True, cwd=str(REPO_ROOT), env=env)
    with open(log, "a", encoding="utf-8") as out:
        out.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"the plain delta-spark loop failed; see {log}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- delta-rs ---------------------------------------------------------------------------------

def run_delta_rs(landing: Path, work: Path) -> tuple[float, float]:
    """Seconds and CPU seconds of the delta-rs MERGE loop."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    names = sorted(p.name for p in landing.iterdir() if p.is_dir())
    for name in names:
        first = pq.read_table(landing / name / f"{1:020d}.parquet").drop_columns([MARKER])
        write_deltalake(str(work / name), first)
    began, cpu = time.perf_counter(), time.process_time()
    for name in names:
        source = pq.read_table(landing / name / f"{2:020d}.parquet")
        (DeltaTable(str(work / name))
         .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_delete(f"s.{MARKER} = 2")
         .when_matched_update({c: f"s.{c}" for c in ("id", "payload", "amount")})
         .when_not_matched_insert({c: f"s.{c}" for c in ("id", "payload", "amount")},
                                  predicate=f"s.{MARKER} != 2")
         .execute())
    return time.perf_counter() - began, time.process_time() - cpu


# --- watch latency and a long history ---------------------------------------------------------------

def watch_latency(work: Path, tables: int, files: int, master: str, log: Path) -> dict:
    """`mirror --watch 0.5` over `tables` tables; `files` files landed into one of them."""
    import latency_bench as lb

    landing, warehouse = work / "landing", work / "warehouse"
    names = table_names(tables)
    land(landing, names, 1, load_table(100))
    env = dict(os.environ, MIRRORSPEC_SPARK_LOG_LEVEL="ERROR", NO_COLOR="1")
    with open(log, "a", encoding="utf-8") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mirrorspec", "mirror", "--landing-zone", str(landing),
             "--warehouse", str(warehouse), "--watch", "0.5", "--master", master],
            stdout=out, stderr=subprocess.STDOUT, cwd=str(REPO_ROOT), env=env)
        try:
            for name in names:  # the initial loads, JVM start included: not measured
                lb.wait_visible(lb.DeltaLogWatcher(warehouse / "dbo" / name), 1, process, 1800)
            watcher = lb.DeltaLogWatcher(warehouse / "dbo" / names[0])
            latencies = []
            for sequence in range(2, files + 2):
                landed = lb.land(landing / names[0], sequence, 10, lb.first_id_of(sequence, 10))
                latencies.append(lb.wait_visible(watcher, sequence, process, 600) - landed)
        finally:
            process.terminate()
            process.wait(timeout=120)
    return {"p50": lb.percentile(latencies, 50), "p95": lb.percentile(latencies, 95)}


def loop_pass(work: Path, tables: int, rows: int, changes: int, master: str,
              threads: int | None, log: Path, rounds: int = 2) -> list[float]:
    """`mirror --watch 0.5` over `tables` tables: after the initial loads, `rounds` times a
    change file lands in every table at once; seconds from the landing to the last table's
    commit, per round. Before each round the watcher is left idle for 2 s + 0.6 s a table, the
    time its snapshot warmer needs to build the last pass's versions (mirror/warm.py)."""
    import latency_bench as lb

    landing, warehouse = work / "landing", work / "warehouse"
    names = table_names(tables)
    land(landing, names, 1, load_table(rows))
    command = [sys.executable, "-m", "mirrorspec", "mirror", "--landing-zone", str(landing),
               "--warehouse", str(warehouse), "--watch", "0.5", "--master", master]
    if threads:
        command += ["--threads", str(threads)]
    env = dict(os.environ, MIRRORSPEC_SPARK_LOG_LEVEL="ERROR", NO_COLOR="1")
    seconds = []
    with open(log, "a", encoding="utf-8") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=str(REPO_ROOT), env=env)
        try:
            watchers = [lb.DeltaLogWatcher(warehouse / "dbo" / name) for name in names]
            for watcher in watchers:  # the initial loads, JVM start included: not measured
                lb.wait_visible(watcher, 1, process, 1800)
            data = change_table(rows, changes)
            for sequence in range(2, rounds + 2):
                time.sleep(2 + 0.6 * tables)  # idle: the warmer builds the new versions
                began = time.perf_counter()
                land(landing, names, sequence, data)
                seen = [lb.wait_visible(w, sequence, process, 1800) for w in watchers]
                seconds.append(max(seen) - began)
        finally:
            process.terminate()
            process.wait(timeout=120)
    return seconds


def long_history(work: Path, commits: int, rows: int, changes: int, master: str,
                 log: Path) -> dict:
    """One pass applying `changes` rows to a table of `commits` commits and to a fresh one."""
    import pyarrow as pa
    from deltalake import write_deltalake

    landing, warehouse = work / "landing", work / "warehouse"
    first = load_table(rows).drop_columns([MARKER])
    write_deltalake(str(warehouse / "dbo" / "fresh"), first)
    old = str(warehouse / "dbo" / "old")
    write_deltalake(old, first)
    for n in range(commits - 1):
        write_deltalake(old, pa.table({"id": pa.array([rows + 10_000 + n], pa.int64()),
                                       "payload": ["x"], "amount": [0.0]}), mode="append")
    land(landing, ["fresh", "old"], 1, change_table(rows, changes))
    result = run_mirror(landing, warehouse, master, 1, log)
    return {"old": result["tables"].get("dbo.old"), "fresh": result["tables"].get("dbo.fresh"),
            "exit": result["exit"]}


# --- figures ------------------------------------------------------------------------------------

def slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares seconds per table over (T, seconds) points."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_s = sum(s for _, s in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (s - mean_s) for t, s in points) / var if var else None


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def set_autogroup_nice(value: int) -> None:
    Path("/proc/self/autogroup").write_text(f"{value}\n")
    print(f"autogroup nice set to {value}: {Path('/proc/self/autogroup').read_text().strip()}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="1,10,50,200", help="the Ts, comma separated")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--threads", default="",
                        help="mirrorspec's --threads, comma separated to compare several "
                             "(default: its own default)")
    parser.add_argument("--baseline", default=None, metavar="CHECKOUT",
                        help="also time another checkout's mirrorspec (e.g. /work/main), "
                             "with its own defaults")
    parser.add_argument("--warm-server", action="store_true",
                        help="also time both passes through a warm Spark server (`mirrorspec "
                             "spark start`, started once, not timed), as a watch loop or a "
                             "scheduler on one machine would run them")
    parser.add_argument("--loop", action="store_true",
                        help="also time, for each T, a change file landing in every table at "
                             "once while `mirror --watch` runs (the loop, snapshots warmed "
                             "between passes)")
    parser.add_argument("--plain-threads", type=int, default=2,
                        help="threads of the threaded plain delta-spark loop")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-watch", action="store_true")
    parser.add_argument("--watch-tables", type=int, default=50)
    parser.add_argument("--watch-files", type=int, default=10)
    parser.add_argument("--no-history", action="store_true")
    parser.add_argument("--history-commits", type=int, default=300)
    parser.add_argument("--autogroup-nice", type=int, default=None)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--plain-worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--landing", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.plain_worker:
        plain_worker(args)
        return {}
    if args.autogroup_nice is not None:
        set_autogroup_nice(args.autogroup_nice)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="mirrorspec-tables-bench-"))
    log = work / "bench.log"
    work.mkdir(parents=True, exist_ok=True)
    figures: dict = {"machine": machine(), "loadavg_before": loadavg(), "runs": []}
    print(f"load average before: {figures['loadavg_before']}  (log: {log})", flush=True)
    variants: list[tuple[str, int | None, str | None]] = [
        (f"threads {t}" if t else "mirrorspec", int(t) if t else None, None)
        for t in (args.threads.split(",") if args.threads else [""])]
    if args.baseline:
        variants.append(("baseline", None, args.baseline))
    if args.warm_server:
        first_threads = args.threads.split(",")[0] if args.threads else ""
        variants.append(("warm server", int(first_threads) if first_threads else None, "warm"))
    started_projects: list[Path] = []
    for count in [int(t) for t in args.tables.split(",") if t.strip()]:
        root = work / f"T{count}"
        shutil.rmtree(root, ignore_errors=True)
        names = table_names(count)
        run: dict = {"tables": count}
        for label, threads, code in variants:
            landing, warehouse = root / label / "landing", root / label / "warehouse"
            project = None
            if code == "warm":
                code = None
                project = warm_project(root / label / "project", landing, warehouse,
                                       args.master)
                if not started_projects:  # one server serves every T (same settings)
                    warm_server(project, "start", log)
                    started_projects.append(project)
                    atexit.register(lambda: [warm_server(p, "stop", log)
                                             for p in started_projects])
            land(landing, names, 1, load_table(args.rows))
            first = run_mirror(landing, warehouse, args.master, threads, log, code, project)
            land(landing, names, 2, change_table(args.rows, args.changes))
            second = run_mirror(landing, warehouse, args.master, threads, log, code, project)
            run[label] = second["beyond_start"]
            run[f"{label} cpu"] = second["cpu_beyond_start"]
            run[f"{label} exit"] = (first["exit"], second["exit"])
            run[f"{label} peak"] = second["peak_rss"]
            print(f"T={count} {label}: pass 2 {second['beyond_start']:.1f} s beyond the start "
                  f"({second['wall']:.1f} s whole; CPU {second['cpu_beyond_start']:.1f} s), "
                  f"exits {first['exit']}/{second['exit']}, "
                  f"peak {fmt_bytes(second['peak_rss'])}; load {loadavg()}", flush=True)
        if args.loop:
            first_threads = args.threads.split(",")[0] if args.threads else ""
            rounds = loop_pass(root / "loop", count, args.rows, args.changes, args.master,
                               int(first_threads) if first_threads else None, log)
            run["watch loop"] = rounds[-1]
            print(f"T={count} watch loop: a change in every table committed in "
                  f"{', '.join(f'{r:.1f}' for r in rounds)} s (rounds); load {loadavg()}",
                  flush=True)
        plain_landing = root / "plain-landing"
        land(plain_landing, names, 1, load_table(args.rows))
        land(plain_landing, names, 2, change_table(args.rows, args.changes))
        for key, threads in (("plain", 1), ("plain threaded", args.plain_threads)):
            plain = run_plain(plain_landing, root / key.replace(" ", "-"), args.master, threads,
                              log)
            run[key], run[f"{key} cpu"] = plain["seconds"], plain["cpu"]
        run["delta-rs"], run["delta-rs cpu"] = run_delta_rs(plain_landing, root / "delta-rs")
        run["loadavg"] = loadavg()
        figures["runs"].append(run)
        print(f"T={count}: plain {run['plain']:.1f} s, plain on {args.plain_threads} threads "
              f"{run['plain threaded']:.1f} s, delta-rs {run['delta-rs']:.2f} s; load "
              f"{run['loadavg']}", flush=True)
    while started_projects:
        warm_server(started_projects.pop(), "stop", log)
    runs = figures["runs"]
    keys = [v[0] for v in variants] + ["plain", "plain threaded", "delta-rs"]
    keys += [f"{k} cpu" for k in keys]
    if args.loop:
        keys.insert(len(variants), "watch loop")
    print_table(["T"] + keys + ["load average after"],
                [[r["tables"]] + [f"{r[k]:.2f}" for k in keys] + [r["loadavg"]] for r in runs])
    slopes = {key: slope([(r["tables"], r[key]) for r in runs]) for key in keys}
    figures["slopes"] = slopes
    if len(runs) > 1:
        print("per-table slope (s): " + ", ".join(f"{k} {v:.3f}" for k, v in slopes.items()
                                                  if v is not None))
        labels = [v[0] for v in variants] + (["watch loop"] if args.loop else [])
        for label in labels:
            for key in ("plain", "plain threaded"):
                for unit in ("", " cpu"):  # wall seconds, then CPU seconds
                    if label + unit not in slopes:
                        continue  # the loop's CPU is not measured
                    mine, theirs = slopes[label + unit], slopes[key + unit]
                    if mine is not None and theirs:
                        figures[f"ratio {label}{unit} / {key}{unit}"] = mine / theirs
                        print(f"slope ratio {label}{unit} / {key}{unit}: {mine / theirs:.2f}")
    if not args.no_watch:
        figures["watch"] = {}
        for count in (1, args.watch_tables):
            root = work / f"watch{count}"
            shutil.rmtree(root, ignore_errors=True)
            figures["watch"][count] = watch_latency(root, count, args.watch_files, args.master,
                                                    log)
            print(f"watch latency, {count} table(s): p50 {figures['watch'][count]['p50']:.2f} s,"
                  f" p95 {figures['watch'][count]['p95']:.2f} s; load {loadavg()}", flush=True)
    if not args.no_history:
        root = work / "history"
        shutil.rmtree(root, ignore_errors=True)
        figures["history"] = long_history(root, args.history_commits, args.rows, args.changes,
                                          args.master, log)
        print(f"one pass: table of {args.history_commits} commits "
              f"{figures['history']['old']} s, fresh table {figures['history']['fresh']} s")
    figures["loadavg_after"] = loadavg()
    print(f"load average after: {figures['loadavg_after']}")
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
