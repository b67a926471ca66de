"""Whole commands, cold: every row of the performance table in one command, each beside its
reference and with the ratio, plus what Spark did (queries planned, jobs, stages, tasks, Python
workers) — figures that don't move with the machine's load.

Cases (sizes at --scale 1.0; `--cases` picks some):

  big     1M changes (100 files) into 10M rows: `mirror` minus a bare Spark+Delta start counting
          the table, against delta-rs's MERGE of the same changes (target ≤ 3×)
  wide    100k changes (10 files) into 30M rows: the same (target ≤ 1.25×)
  tiny    1k changes into 1M rows: the whole `mirror` command against the bare start + count
          (target ≤ 1.1×)
  qlik    1M Qlik Replicate messages: the whole `publish` command minus the same command
          publishing a 10-message feed, against pyarrow's JSON reader + a Parquet write
          (targets ≥ 100k changes/s and ≤ 3×)
  arcion  1M Arcion realtime CSV rows: the whole `publish` minus a bare start, against pyarrow's
          CSV reader + a Parquet write (target ≤ 5×)

Each command runs in its own process tree (its own JVM) with a Spark event log; the load
average is printed before each. `--warm` also times the same pass (or publish) a second time in
one process, after a first one, as `mirror --watch` or a long `run` makes it: where the whole
command's extra seconds go is the difference. On a shared machine read the counts, the CPU
seconds and the ratios, and repeat on an idle one for the figures (`--rounds 3` keeps each
command's best).

    .venv/bin/python bench/cold_bench.py --scale 0.05              # a quick look (minutes)
    .venv/bin/python bench/cold_bench.py --scale 1 --rounds 3      # the table (~20 GiB disk)
    .venv/bin/python bench/cold_bench.py --cases tiny,qlik --warm --json
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

from _common import _TICKS, REPO_ROOT, emit, fmt_bytes, machine, print_table, run_tree
from _eventlog import event_log_env, python_workers, summarize
# the references' starts: plain PySpark with Delta's jars counting a table (the mirror cases),
# mirrorspec's own session counting spark.range(1) (the publish cases, as publish_bench does)
from batch_bench import BARE_COUNT
from publish_bench import BARE_START

CASES = ("big", "wide", "tiny", "qlik", "arcion")
TARGETS = {"big": 3.0, "wide": 1.25, "tiny": 1.1, "qlik": 3.0, "arcion": 5.0}

def load() -> float:
    return round(os.getloadavg()[0], 2)


def run_command(argv: list[str], cwd: Path, events: Path | None = None,
                env: dict[str, str] | None = None) -> dict:
    """One command's wall and CPU seconds (its whole process tree), peak RSS, Python workers,
    and with `events` the summary of the Spark event log it wrote there."""
    base = dict(env or os.environ, PYTHONPATH=str(REPO_ROOT))
    # as a user's install runs: Python's bytecode cache on (some CI and sandboxes switch it
    # off, and then every process compiles mirrorspec's modules from source again)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    run_env = event_log_env(events, base) if events is not None else base
    before = load()
    figures, cpu, output = run_tree(argv, cwd, run_env, interval=0.05)
    workers, worker_cpu = python_workers(cpu.commands, cpu.seen, _TICKS)
    out = dict(figures, load_before=before, python_workers=workers,
               python_workers_cpu_s=worker_cpu)
    if events is not None:
        out["spark"] = summarize(events)
    lines = [line for line in output.splitlines() if line.startswith("{")]
    if lines:  # a child of this bench says what it timed (`--warm-mirror`, `--warm-publish`)
        out["result"] = json.loads(lines[-1])
    return out


def best_of(rounds: int, run) -> dict:
    """The run of least wall time among `rounds` (each a fresh call of `run(round)`)."""
    results = [run(i) for i in range(rounds)]
    return min(results, key=lambda r: r.get("wall_s", r.get("seconds", 0)))


def ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b > 0 else float("inf")


def _python(*args: str) -> list[str]:
    return [sys.executable, *args]


def _mirror_argv(landing: Path, warehouse: Path) -> list[str]:
    return _python("-m", "mirrorspec", "mirror", "--landing-zone", str(landing), "--warehouse",
                   str(warehouse), "--master", "local[2]", "--threads", "1", "-q")


# --- mirror cases -------------------------------------------------------------------------------

def mirror_case(name: str, work: Path, rows: int, changes: int, files: int, rounds: int,
                warm: bool) -> dict:
    """`changes` in `files` files into a `rows`-row table as whole `mirror` commands, beside a
    bare start counting the table and delta-rs merging the same changes."""
    from mirror_bench import TABLE, deltalake_merge, generate

    root = work / name
    landing, warehouse = root / "landing", root / "warehouse"
    _, paths = generate(landing / TABLE, root / "changes", rows, changes, files, seed=7)
    run_command(_mirror_argv(landing, warehouse), REPO_ROOT)  # the initial load
    table = warehouse / "dbo" / TABLE
    saved = root / "saved"
    shutil.copytree(table, saved / "table")
    shutil.copytree(landing, saved / "landing")

    def reset() -> None:  # the table and landing zone as before the batch, the batch landed
        for path in (table, landing):
            shutil.rmtree(path)
        shutil.copytree(saved / "table", table)
        shutil.copytree(saved / "landing", landing)
        for path in paths:
            shutil.copy2(path, landing / TABLE / path.name)

    bare_runs, mirror_runs = [], []
    for index in range(rounds):  # alternating, so both see the same load
        reset()
        bare_runs.append(run_command(_python("-c", BARE_COUNT, str(table)), REPO_ROOT,
                                     root / f"events-bare-{index}"))
        mirror_runs.append(run_command(_mirror_argv(landing, warehouse), REPO_ROOT,
                                       root / f"events-mirror-{index}"))
    bare = min(bare_runs, key=lambda r: r["wall_s"])
    mirror = min(mirror_runs, key=lambda r: r["wall_s"])

    def delta_rs(index: int) -> dict:
        copy = root / f"delta-rs-{index}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(saved / "table", copy)
        started, cpu = time.perf_counter(), time.process_time()
        deltalake_merge(copy, paths)
        return {"wall_s": round(time.perf_counter() - started, 2),
                "cpu_s": round(time.process_time() - cpu, 2)}

    reference = best_of(rounds, delta_rs)
    out = {"rows": rows, "changes": changes, "files": files, "mirror": mirror, "bare": bare,
           "reference": reference, "reference_name": "delta-rs MERGE"}
    if name == "tiny":
        out["figure_s"] = mirror["wall_s"]
        out["reference"] = bare
        out["reference_name"] = "bare start + count"
    else:
        out["figure_s"] = round(mirror["wall_s"] - bare["wall_s"], 2)
    out["ratio"] = ratio(out["figure_s"], out["reference"]["wall_s"])
    if warm:
        reset()
        out["warm"] = run_command(_python(str(Path(__file__)), "--warm-mirror", str(landing),
                                          str(warehouse)), REPO_ROOT, root / "events-warm")
    return out


# --- publish cases --------------------------------------------------------------------------------

def publish_case(feed: str, work: Path, changes: int, rounds: int, warm: bool) -> dict:
    """`mirrorspec publish` of one feed as a whole command, beside its reference start and
    pyarrow parsing the same files and writing them as Parquet."""
    from publish_bench import TABLES, generate_project, pyarrow_reference

    root = work / feed
    project = root / "project"
    generate_project(project, changes, "local[2]", (feed,))
    small = root / "small"
    generate_project(small, 10, "local[2]", (feed,))
    folder = project / "feed" / feed
    arrow = best_of(rounds, lambda i: pyarrow_reference(feed, folder, root / f"{feed}-{i}.parquet"))
    arrow = {"wall_s": arrow["seconds"], "cpu_s": arrow["cpu_s"], "rows": arrow["rows"]}

    def publish(where: Path, index: int, tag: str) -> dict:
        for leftover in ("landing_zone", "target", "warehouse"):
            shutil.rmtree(where / leftover, ignore_errors=True)
        return run_command(_python("-m", "mirrorspec", "publish", "--project-dir", str(where),
                                   "-s", TABLES[feed], "-q"), where,
                           root / f"events-{tag}-{index}")

    start_runs, publish_runs = [], []
    for index in range(rounds):
        if feed == "qlik":  # the way: beyond the same command's 10-message publish
            start_runs.append(publish(small, index, "small"))
        else:
            start_runs.append(run_command(_python("-c", BARE_START), REPO_ROOT,
                                          root / f"events-bare-{index}"))
        publish_runs.append(publish(project, index, "publish"))
    start = min(start_runs, key=lambda r: r["wall_s"])
    command = min(publish_runs, key=lambda r: r["wall_s"])
    figure = round(command["wall_s"] - start["wall_s"], 2)
    out = {"changes": changes, "publish": command, "bare": start,
           "bare_name": "10-message publish" if feed == "qlik" else "bare start",
           "reference": arrow, "reference_name": "pyarrow read + Parquet write",
           "figure_s": figure, "ratio": ratio(figure, arrow["wall_s"]),
           "changes_per_s": round(changes / figure) if figure > 0 else None}
    if warm:
        for leftover in ("landing_zone", "target", "warehouse"):
            shutil.rmtree(project / leftover, ignore_errors=True)
        out["warm"] = run_command(_python(str(Path(__file__)), "--warm-publish", str(project),
                                          TABLES[feed]), REPO_ROOT, root / "events-warm")
    return out


# --- the same work warm, in one process (a child of this bench) ----------------------------------

def _warm_mirror(landing: str, warehouse: str) -> None:
    """Warm the session on a throw-away table (initial load + a MERGE), then time the pass."""
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone
    from mirrorspec.spark.platform.session import build_session

    spark = build_session("local[2]", {})
    _throwaway_passes(spark, Path(tempfile.mkdtemp(prefix="mirrorspec-cold-warm-")))
    started = time.perf_counter()
    result = mirror_landing_zone(spark, landing, warehouse, MirrorOptions(threads=1))
    seconds = time.perf_counter() - started
    if result.failed:
        raise SystemExit(f"warm pass failed: {result.tables[0].error}")
    print(json.dumps({"warm_s": round(seconds, 2)}))
    spark.stop()


def _throwaway_passes(spark, work: Path) -> None:
    """An initial load, then a MERGE (update, delete, insert), of a small table in `work`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone

    folder = work / "landing" / "warm_up"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}\n', encoding="utf-8")
    for sequence, (ids, markers) in enumerate([(list(range(100)), [0] * 100),
                                               ([1, 2, 500], [1, 2, 0])], start=1):
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                                 "name": [f"row {i}" for i in ids],
                                 "__rowMarker__": pa.array(markers, pa.int32())}),
                       folder / f"{sequence:020d}.parquet")
        mirror_landing_zone(spark, str(work / "landing"), str(work / "warehouse"),
                            MirrorOptions(threads=1))
    shutil.rmtree(work, ignore_errors=True)


def _warm_publish(project: str, table_name: str) -> None:
    """Publish the feed once (the session's first), then again into a fresh landing folder."""
    from dataclasses import replace

    from mirrorspec.compile import compile_project
    from mirrorspec.spark.platform.session import build_session
    from mirrorspec.spark.publish.publisher import publish_table

    plan = compile_project(Path(project), check_landing=False).plan
    table = next(t for t in plan.tables if t.name == table_name)
    spark = build_session("local[2]", {})
    times = []
    for attempt in ("first", "warm"):
        landing = Path(project) / "warm-landing" / attempt
        run_table = replace(table, landing_path=str(landing))
        run_plan = replace(plan, state_path=str(landing.parent / f"{attempt}_state"))
        started = time.perf_counter()
        result = publish_table(spark, run_table, run_plan)
        times.append(round(time.perf_counter() - started, 2))
        if result.status != "Published":
            raise SystemExit(f"warm publish failed: {result.error}")
    print(json.dumps({"first_s": times[0], "warm_s": times[1]}))
    spark.stop()


# --- output ------------------------------------------------------------------------------------

def _counts(run: dict) -> str:
    spark = run.get("spark") or {}
    return (f"{spark.get('queries', '?')} queries, {spark.get('jobs', '?')} jobs, "
            f"{spark.get('stages', '?')} stages, {spark.get('tasks', '?')} tasks, "
            f"{run.get('python_workers', 0)} Python workers "
            f"({run.get('python_workers_cpu_s', 0)} CPU s)")


def met(case: dict, name: str) -> str:
    """yes/no against the target; "?" when the figure is no figure (the command beat its own
    reference start: noise from a loaded machine)."""
    if case["figure_s"] <= 0:
        return "?"
    return "yes" if case["ratio"] <= TARGETS[name] else "no"


def table_rows(figures: dict) -> list[list]:
    rows = []
    labels = {"big": "{changes:,} changes ({files} files) → {rows:,} rows, beyond a bare start",
              "wide": "{changes:,} changes ({files} files) → {rows:,} rows, beyond a bare start",
              "tiny": "{changes:,} changes → {rows:,} rows, whole command",
              "qlik": "publish {changes:,} Qlik messages, beyond a 10-message publish",
              "arcion": "publish {changes:,} Arcion CSV rows, beyond a bare start"}
    for name in CASES:
        case = figures.get(name)
        if not case:
            continue
        command = case.get("mirror") or case.get("publish")
        figure = f"{case['figure_s']:.2f} s"
        if case.get("changes_per_s"):
            figure += f" ({case['changes_per_s']:,} changes/s)"
        rows.append([name, labels[name].format(**case), figure,
                     f"{case['reference_name']} {case['reference']['wall_s']:.2f} s",
                     f"{case['ratio']}×", f"≤ {TARGETS[name]}×", met(case, name)])
        rows.append(["", f"  command {command['wall_s']:.2f} s (CPU {command['cpu_s']:.1f} s, "
                         f"{fmt_bytes(command['peak_rss'])}), load {command['load_before']}",
                     _counts(command), "", "", "", ""])
        warm = case.get("warm")
        if warm:
            result = warm.get("result", {})
            said = (f"first {result['first_s']} s, warm {result['warm_s']} s"
                    if "first_s" in result else f"warm pass {result.get('warm_s')} s")
            rows.append(["", "  the same work in one process, after a first", said, "", "",
                         "", ""])
    return rows


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="1.0 = the issue's sizes; 0.05 for a look in minutes")
    parser.add_argument("--cases", default=",".join(CASES), help=f"some of {', '.join(CASES)}")
    parser.add_argument("--rounds", type=int, default=1, help="each command's best of N")
    parser.add_argument("--warm", action="store_true",
                        help="also time the same pass/publish warm, in one process")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temp folder)")
    parser.add_argument("--json", action="store_true", help="last line: the figures as JSON")
    parser.add_argument("--warm-mirror", nargs=2, metavar=("LANDING", "WAREHOUSE"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--warm-publish", nargs=2, metavar=("PROJECT", "TABLE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warm_mirror:
        _warm_mirror(*args.warm_mirror)
        return None
    if args.warm_publish:
        _warm_publish(*args.warm_publish)
        return None
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case {', '.join(unknown)}; choose from {', '.join(CASES)}")
    scaled = lambda n: max(int(n * args.scale), 1)  # noqa: E731
    work = Path(args.work or tempfile.mkdtemp(prefix="mirrorspec-cold-"))
    info = machine()
    say = sys.stderr if args.json else sys.stdout
    print(f"cold bench, scale {args.scale}, {info.get('cpus')} CPUs, load {load()}; in {work}",
          file=say, flush=True)
    figures: dict = {"scale": args.scale, "machine": info}
    try:
        for name in cases:
            print(f"  {name} … (load {load()})", file=say, flush=True)
            if name == "big":
                figures[name] = mirror_case(name, work, scaled(10_000_000), scaled(1_000_000),
                                            max(min(100, scaled(1_000_000) // 100), 1),
                                            args.rounds, args.warm)
            elif name == "wide":
                figures[name] = mirror_case(name, work, scaled(30_000_000), scaled(100_000), 10,
                                            args.rounds, args.warm)
            elif name == "tiny":
                figures[name] = mirror_case(name, work, scaled(1_000_000), 1000, 1,
                                            args.rounds, args.warm)
            else:
                figures[name] = publish_case(name, work, scaled(1_000_000), args.rounds,
                                             args.warm)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print_table(["case", "workload", "mirrorspec", "reference", "ratio", "target", "met"],
                table_rows(figures), out=say)
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
