"""Warm Spark server benchmark: a tiny-batch `mirrorspec run` as a whole command, cold (a JVM of
its own) against the same command with `mirrorspec spark start` keeping Spark warm, beside
delta-rs doing the same MERGE. Target: warm ≤ 0.3× cold at load ≤ 4, never slower than cold.

The project is `mirrorspec init shop` in a temporary folder; each round lands one more nightly
orders snapshot (one new row: one change), so every `run` publishes and mirrors one change.
Cold and warm rounds alternate (MIRRORSPEC_WARM=off makes a round cold), so both see the same
machine load; the load average is printed before and after. Python's bytecode is cached
(in the temporary folder), as an installed package has it. delta-rs merges the same one-row
change into a table of the same orders rows.

    .venv/bin/python bench/warm_bench.py [--rounds 2] [--json] [--profile] [--warm-up-runs N]

`--profile`: the server writes a Spark event log, and one more warm `run` after the rounds
(not timed with them) runs with every Spark Connect round trip traced (`_connect_trace.py`):
the table says, per step, its seconds, Spark jobs and RPCs, and which mirrorspec functions
made the RPCs and the jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_ROOT, emit, machine, print_table


def cli(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one `mirrorspec` command (it must exit 0)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mirrorspec", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mirrorspec {' '.join(args)} failed:\n{done.stdout[-3000:]}"
                         f"\n{done.stderr[-3000:]}")
    return seconds


def next_snapshot(project: Path, order_id: int) -> None:
    """Land the next nightly orders snapshot, dated the day after the last (so it sorts after
    it, as the extract reader orders snapshots by name): the last one plus one new order line."""
    import datetime as dt

    feeds = project / "feeds" / "orders"
    latest = sorted(feeds.glob("orders_*.csv"))[-1]
    day = dt.date.fromisoformat(latest.stem.removeprefix("orders_")) + dt.timedelta(days=1)
    (feeds / f"orders_{day.isoformat()}.csv").write_text(
        latest.read_text().rstrip("\n") + f"\n{order_id},1,2,eraser,1,0.80\n")


def deltalake_merge(project: Path, work: Path, order_id: int) -> float:
    """delta-rs: the orders rows in a Delta table, then one MERGE of a one-row change (timed)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    from deltalake import DeltaTable, write_deltalake

    rows = pcsv.read_csv(sorted((project / "feeds" / "orders").glob("*.csv"))[0])
    path = work / "deltars_orders"
    write_deltalake(str(path), rows, mode="overwrite")
    change = pa.table({name: pa.array([value], rows.schema.field(name).type) for name, value in
                       zip(rows.column_names, [order_id, 1, 2, "eraser", 1, 0.80])})
    started = time.perf_counter()
    (DeltaTable(str(path))
     .merge(change, "t.order_id = s.order_id AND t.line_no = s.line_no", source_alias="s",
            target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())
    return time.perf_counter() - started


def with_event_log(project: Path, folder: Path) -> None:
    """The project's profile writes an uncompressed Spark event log to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    profiles = project / "profiles.yml"
    text = profiles.read_text()
    conf = "          spark.sql.shuffle.partitions: 4\n"
    if conf not in text:
        raise SystemExit(f"{profiles}: the scaffold's spark.conf changed; update warm_bench")
    profiles.write_text(text.replace(conf, conf + "".join(
        f"          {key}: {value}\n" for key, value in (
            ("spark.eventLog.enabled", "true"), ("spark.eventLog.dir", f"file://{folder}"),
            ("spark.eventLog.compress", "false")))))


def traced_run(project: Path, work: Path, env: dict[str, str], events: Path
               ) -> tuple[float, list[list], list[list]]:
    """One warm `run` with its Spark Connect round trips traced: (seconds, steps, places)."""
    from _connect_trace import breakdown

    trace = work / "trace.json"
    ready = json.loads(next((work / "srv").glob("*.json")).read_text())
    env = dict(env, TRACE_SERVER_PID=str(ready["pid"]))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(Path(__file__).parent / "_connect_trace.py"),
                           str(trace), "run"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=1800)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"traced run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    time.sleep(1)  # the event log is flushed as events come; let the last job's end land
    steps, places = breakdown(trace, events, project / "target" / "run_results.json")
    return seconds, steps, places


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="cold and warm runs of each kind")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--warm-up-runs", type=int, default=0,
                        help="untimed warm runs after `spark start`, before the rounds (the "
                             "server's JIT and Delta's cache of the orders table, as a server "
                             "that has served runs has them)")
    parser.add_argument("--profile", action="store_true",
                        help="one more warm run, traced: steps, Spark jobs and RPCs")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="warm-bench-") as folder:
        work = Path(folder)
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MIRRORSPEC_WARM_DIR=str(work / "srv"),
                   MIRRORSPEC_LOG_DIR=str(work), PYTHONPYCACHEPREFIX=str(work / "pycache"))
        # Bytecode cached, as in an installed package: the untimed first commands write it
        # (with PYTHONDONTWRITEBYTECODE every command compiled mirrorspec's modules again,
        # ~0.5 CPU s of each run, cold or warm, that no installed mirrorspec pays).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cold_env = dict(env, MIRRORSPEC_WARM="off")
        cli(["init", "shop"], work, env)
        project = work / "shop"
        events = work / "events"
        if args.profile:
            with_event_log(project, events)
        initial = cli(["run"], project, cold_env)  # the initial load: tables exist after it
        start = cli(["spark", "start"], project, env)
        cold, warm = [], []
        order_id = 2000
        try:
            for _ in range(args.warm_up_runs):
                order_id += 1
                next_snapshot(project, order_id)
                cli(["run"], project, env)
            for _ in range(args.rounds):
                for times, round_env in ((cold, cold_env), (warm, env)):
                    order_id += 1
                    next_snapshot(project, order_id)
                    times.append(cli(["run"], project, round_env))
            if args.profile:
                order_id += 1
                next_snapshot(project, order_id)
                profiled = traced_run(project, work, env, events)
        finally:
            stop = cli(["spark", "stop"], project, env)
        delta_rs = deltalake_merge(project, work, order_id + 1)
    load_after = os.getloadavg()
    best_cold, best_warm = min(cold), min(warm)
    figures = {
        "machine": machine(), "rounds": args.rounds, "warm_up_runs": args.warm_up_runs,
        "initial_run_s": round(initial, 2),
        "server_start_s": round(start, 2), "server_stop_s": round(stop, 2),
        "cold_s": [round(t, 2) for t in cold], "warm_s": [round(t, 2) for t in warm],
        "deltars_merge_s": round(delta_rs, 3),
        "ratio_warm_cold": round(best_warm / best_cold, 3),
        # each warm round beside the cold round just before it (same load): never above 1
        "round_ratios": [round(w / c, 3) for c, w in zip(cold, warm)],
        "ratio_warm_deltars": round(best_warm / delta_rs, 1),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
    }
    if not args.json:
        print_table(["what", "seconds"], [
            ["run, cold (own JVM), best", f"{best_cold:.2f}"],
            ["run, warm server, best", f"{best_warm:.2f}"],
            ["delta-rs MERGE of the same change", f"{delta_rs:.3f}"],
            ["spark start (once)", f"{start:.2f}"],
        ])
        print(f"warm / cold = {figures['ratio_warm_cold']}  (target ≤ 0.3 at load ≤ 4)   "
              f"warm / delta-rs = {figures['ratio_warm_deltars']}×")
        print(f"cold runs {figures['cold_s']}  warm runs {figures['warm_s']}  "
              f"warm/cold by round {figures['round_ratios']} (never above 1)")
        print(f"load average before {figures['load_before']}, after {figures['load_after']} "
              f"({os.cpu_count()} CPUs)")
    if args.profile:
        seconds, steps, places = profiled
        figures["profile"] = {"traced_run_s": round(seconds, 2), "steps": steps,
                              "places": places}
        if not args.json:
            print(f"\none more warm run, traced: {seconds:.2f} s")
            print_table(["step", "seconds", "jobs", "RPCs", "RPC s", "server CPU s"], steps)
            print_table(["RPC: where", "RPCs", "seconds", "jobs", "server CPU s"], places[:25])
    emit(figures, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
