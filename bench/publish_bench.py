"""Publish benchmark: CDC feed files → landing zone, through `publish_table`.

At --scale 1.0: 1M Qlik Replicate data messages (JSON lines, 10 files; 50% INSERT, 35% UPDATE
with beforeData, 15% DELETE, transactions of 10 events) and 1M Arcion realtime CSV rows (3x+3
columns, 10 files, same mix). Per feed, in one run:

- pyarrow's C++ reader (`pyarrow.json.read_json` / `pyarrow.csv.read_csv`) parsing the same
  files and writing one Parquet file: the reference;
- the first `publish_table` of a warm SparkSession (JVM up, the reader's code paths cold: what
  this bench used to report alone) and a second, warm one of the same files into a fresh
  landing folder (the steady state of a long `run` or `--watch`);
- with --python-parser N, each feed warm N more times with and N times without its
  column-wise Arrow path (`sources/arcion_columns.py`, `sources/qlik_columns.py`), alternating,
  and the medians: that path against its baseline, the Python parser alone, in the same
  session; and the CPU per change of one 16 MiB chunk parsed in this process (no Spark) by
  each path, best of 3;
- with --whole-command, `python -m mirrorspec publish` as a process beside a bare Spark start,
  and the difference: the way docs/performance.md measures it;
- with --first-load-check N, each feed warm N times with and N times without the first load's
  insert-key check (`spark/publish/replays.first_load_keys_unique`, the aggregation that lets
  an insert-only first load keep marker 0 when no key repeats; without it the inserts land as 0 unchecked,
  as before keyed inserts became upserts), alternating, and the medians.

Wall and CPU seconds of the process tree (CPU barely moves on a shared machine), changes/s,
ratios to pyarrow, peak RSS. Target: ≥ 100k changes/s on 2 cores; within 3× pyarrow.

    .venv/bin/python bench/publish_bench.py --scale 0.1 [--json] [--feeds qlik,arcion]
        [--python-parser 5] [--whole-command]

`generate_project()` is reused by bench/e2e_bench.py.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuTime, PeakMemory, emit, fmt_bytes, machine, rate, spark_session, timed

FILES = 10
QLIK_TABLE = "orders"
ARCION_TABLE = "items"
TABLES = {"qlik": QLIK_TABLE, "arcion": ARCION_TABLE}
PROJECT_YML = """name: publish_bench
version: "1"
partner:
  name: mirrorspec
  source_type: SQL
"""
TABLES_YML = """tables:
  - name: orders
    schema: qlik
    key_columns: [ORDER_ID]
    columns:
      - {name: ORDER_ID, type: Int64, nullable: false}
      - {name: CUSTOMER_ID, type: Int32}
      - {name: STATUS, type: String}
      - {name: AMOUNT, type: Double}
      - {name: ORDERED_AT, type: DateTime}
    source:
      type: qlik_replicate
      path: feed/qlik
  - name: items
    schema: arcion
    key_columns: [i_id]
    columns:
      - {name: i_id, type: Int64, nullable: false}
      - {name: i_name, type: String}
      - {name: i_price, type: Double}
      - {name: i_qty, type: Int32}
    source:
      type: arcion
      path: feed/arcion
      options:
        header: false
        column_order: [i_id, i_name, i_price, i_qty]
"""
PROFILES_YML = """publish_bench:
  target: bench
  outputs:
    bench:
      landing_zone: landing_zone
      warehouse: warehouse
      spark:
        master: {master}
"""
_STATUS = ("NEW", "PAID", "SHIPPED", "CLOSED")


def _mix(n: int) -> list[str]:
    """The operation of each change: inserts first for a key, then updates/deletes of it."""
    return ["I" if i % 20 < 10 else ("U" if i % 20 < 17 else "D") for i in range(n)]


def _forget(live: list[int], index: int) -> None:
    """Remove live[index] in O(1) (order of the live keys does not matter)."""
    live[index] = live[-1]
    live.pop()


def _keyed_changes(changes: int, files: int, live: list[int]):
    """Per file, the (index, op I/U/D, key) of its changes: inserts take new keys, updates and
    deletes pick a live key; `live` holds the keys still present as the files are consumed."""
    ops = _mix(changes)
    next_id = 1
    per_file = -(-changes // files)
    for f in range(files):
        batch = []
        for i in range(f * per_file, min(changes, (f + 1) * per_file)):
            op = ops[i]
            if op != "I" and not live:
                op = "I"
            if op == "I":
                key = next_id
                next_id += 1
                live.append(key)
            else:
                key = live[(i * 7919) % len(live)]
                if op == "D":
                    _forget(live, (i * 7919) % len(live))
            batch.append((i, op, key))
        yield batch


def generate_qlik(folder: Path, changes: int, files: int = FILES) -> int:
    """`changes` Qlik Replicate data messages in `files` JSON-lines files; returns how many
    keys are live at the end (the mirrored table's row count)."""
    folder.mkdir(parents=True, exist_ok=True)
    live: list[int] = []
    head = '{"magic": "atMSG", "type": "DT", "headers": null, "messageSchemaId": null, ' \
           '"messageSchema": null, "message": {"data": '
    for f, changes_of_file in enumerate(_keyed_changes(changes, files, live)):
        lines = []
        for i, op, key in changes_of_file:
            data = (f'{{"ORDER_ID": {key}, "CUSTOMER_ID": {key % 1000}, '
                    f'"STATUS": "{_STATUS[i % 4]}", "AMOUNT": {i % 10000 / 100:.2f}, '
                    f'"ORDERED_AT": "2024-05-02 10:{i // 60 % 60:02d}:{i % 60:02d}.000000"}}')
            operation = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}[op]
            before = data if op == "U" else "null"
            txn, counter = divmod(i, 10)
            last = "true" if counter == 9 or i == changes - 1 else "false"
            lines.append(
                f'{head}{data}, "beforeData": {before}, "headers": {{"operation": "{operation}", '
                f'"changeSequence": "{20240502100000000000000000000000000 + i}", '
                f'"timestamp": "2024-05-02T10:00:00.000", "streamPosition": "{i:016d}", '
                f'"transactionId": "{txn:032X}", "changeMask": "1F", "columnMask": "1F", '
                f'"transactionEventCounter": {counter + 1}, "transactionLastEvent": {last}}}}}}}')
        (folder / f"CDC{f + 1:08d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(live)


def generate_arcion(folder: Path, changes: int, files: int = FILES) -> int:
    """`changes` Arcion realtime CSV rows (no header; triplets in column_order) in `files`;
    returns how many keys are live at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    live: list[int] = []
    counts = '"{""insertCount"":1,""updateCount"":0,""deleteCount"":0,""replaceCount"":0}"'
    for f, changes_of_file in enumerate(_keyed_changes(changes, files, live)):
        lines = []
        for i, op, key in changes_of_file:
            # as Arcion writes it (its S3 docs' sample): dscId and mutId make it a position
            cursor = (f'"{{""extractorId"":0,""timestamp"":{1620787841959 + i},'
                      f'""dscId"":1620787053905,""mutId"":{i},""partNum"":1,""v"":2}}"')
            if op == "I":
                triplets = f"{key},NULL,1,item {key},NULL,1,{i % 10000 / 100:.2f},NULL,1,{i % 50},NULL,1"
            elif op == "U":
                triplets = (f"NULL,{key},2,item {key} v{i},NULL,1,{i % 10000 / 100:.2f},NULL,1,"
                            f"{i % 50},NULL,1")
            else:
                triplets = f"NULL,{key},2,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0"
            lines.append(f"{triplets},{op},{cursor},{counts}")
        (folder / f"items_{f + 1:04d}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(live)


def generate_project(root: Path, changes: int, master: str,
                     feeds: tuple[str, ...]) -> dict[str, int]:
    """A project with a Qlik and an Arcion table whose feeds hold `changes` changes each;
    returns the expected final row count per feed."""
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "mirrorspec_project.yml").write_text(PROJECT_YML, encoding="utf-8")
    (root / "tables" / "bench.yml").write_text(TABLES_YML, encoding="utf-8")
    (root / "profiles.yml").write_text(PROFILES_YML.format(master=master), encoding="utf-8")
    live = {}
    if "qlik" in feeds:
        live["qlik"] = generate_qlik(root / "feed" / "qlik", changes)
    if "arcion" in feeds:
        live["arcion"] = generate_arcion(root / "feed" / "arcion", changes)
    return live


def compile_plan(root: Path):
    from mirrorspec.compile import compile_project

    return compile_project(root, check_landing=False).plan


def pyarrow_reference(feed: str, folder: Path, out: Path) -> dict:
    """pyarrow's C++ reader parsing the same files (JSON lines / CSV) and writing them as one
    Parquet file: the reference (no ordering, masks or checks: parse + write)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    started = time.perf_counter()
    with CpuTime() as cpu:
        if feed == "qlik":
            tables = [pjson.read_json(f) for f in sorted(folder.iterdir())]
        else:
            options = pcsv.ReadOptions(autogenerate_column_names=True)
            tables = [pcsv.read_csv(f, read_options=options) for f in sorted(folder.iterdir())]
        table = pa.concat_tables(tables, promote_options="default")
        pq.write_table(table, out)
    return {"seconds": round(time.perf_counter() - started, 2), "cpu_s": round(cpu.seconds, 2),
            "rows": table.num_rows}


def _publish(spark, plan, table, landing: Path, columnwise: bool = True) -> dict:
    """One `publish_table` of the whole feed into an empty landing folder (own state);
    `columnwise`: the column-wise Arrow paths (Arcion CSV, Qlik lines)."""
    from dataclasses import replace

    from mirrorspec.sources import arcion, qlik
    from mirrorspec.spark.publish.publisher import publish_table

    table = replace(table, landing_path=str(landing))
    plan = replace(plan, state_path=str(landing.parent / f"{landing.name}_state"))
    defaults = arcion.COLUMNWISE, qlik.COLUMNWISE
    arcion.COLUMNWISE, qlik.COLUMNWISE = columnwise, columnwise
    try:
        with PeakMemory() as memory, CpuTime() as cpu, timed() as clock:
            result = publish_table(spark, table, plan)
    finally:
        arcion.COLUMNWISE, qlik.COLUMNWISE = defaults
    if result.status != "Published":
        raise SystemExit(f"publish of {table.name} failed: {result.error}")
    landed = sum(f.stat().st_size for f in landing.glob("*.parquet"))
    return {"seconds": round(clock.seconds, 2), "cpu_s": round(cpu.seconds, 2),
            "landing_rows": result.rows, "landing_bytes": landed, "peak_rss": memory.peak}


def _alternate(spark, plan, table, landing: Path, pairs: int) -> dict:
    """`pairs` warm publishes with and without the column-wise path, alternating which goes
    first; the median run of each (by wall time) and all wall times."""
    import statistics

    walls: dict[str, list] = {"columnwise": [], "python_parser": []}
    for i in range(pairs):
        for name in (("columnwise", "python_parser") if i % 2 == 0 else
                     ("python_parser", "columnwise")):
            walls[name].append(_publish(spark, plan, table, landing / f"{name}{i}",
                                        columnwise=name == "columnwise"))
    out = {}
    for name, runs in walls.items():
        middle = statistics.median_low([r["seconds"] for r in runs])
        out[name] = dict(next(r for r in runs if r["seconds"] == middle),
                         all_seconds=[r["seconds"] for r in runs])
    return out


def chunk_cpu(feed: str, folder: Path, table) -> dict:
    """CPU µs per change of the first 16 MiB chunk of the feed's first file, parsed in this
    process (no Spark) by the Python parser, and the lists made Arrow arrays as `map_tasks`
    does, and by the column-wise path; best of 3 each."""
    import time

    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from mirrorspec.sources import arcion, qlik
    from mirrorspec.spark.publish.feeds.base import _to_arrow

    first = str(sorted(folder.iterdir())[0])
    if feed == "qlik":
        from mirrorspec.spark.publish.feeds.qlik import _schema

        batch = qlik.QlikReplicateFormat().plan_tasks(table, [first], {})
        columns, tasks, module = batch.columns, batch.tasks, qlik
        schema = to_arrow_schema(_schema(columns))
    else:
        from mirrorspec.sources.base import ERROR_COLUMN, PAIR_COLUMN
        from mirrorspec.sources.delivery import DELIVERY_COLUMN, DELIVERY_TYPE
        from mirrorspec.sources.replicator_positions import ARCION_ORDER_FIELDS
        from mirrorspec.spark.publish.feeds.base import change_schema

        columns, _, tasks = arcion.ArcionFormat().plan_tasks(table, [first])
        module = arcion
        schema = to_arrow_schema(change_schema(  # as ArcionReader.read makes it
            columns, ARCION_ORDER_FIELDS,
            [(PAIR_COLUMN, "string"), (DELIVERY_COLUMN, DELIVERY_TYPE),
             (ERROR_COLUMN, "string")]))
    task = tasks[0]
    out = {}
    for name, columnwise in (("python_parser", False), ("columnwise", True)):
        best, changes, arrow = float("inf"), 0, False
        for _ in range(3):
            task = dict(task, ctx=dict(task["ctx"], columnwise=columnwise))
            started = time.process_time()
            parsed = module.parse_task(task)
            arrays = [_to_arrow(parsed[f.name], f.type, pa) for f in schema]
            best = min(best, time.process_time() - started)
            changes, arrow = len(arrays[0]), not isinstance(parsed["_op"], list)
        out[name] = {"cpu_s": round(best, 4), "changes": changes, "arrow": arrow,
                     "us_per_change": round(best / max(changes, 1) * 1e6, 2)}
    out["chunk_bytes"] = task["end"] - task["start"]
    return out


BARE_START = """
from mirrorspec.spark.platform.session import build_session
spark = build_session("local[2]", {}, app_name="bare")
spark.range(1).count()
spark.stop()
"""


def whole_commands(root: Path, table_name: str) -> dict:
    """The issue's way: `mirrorspec publish` as a process beside a bare Spark start."""
    from batch_bench import run_process

    bare = run_process([sys.executable, "-c", BARE_START])
    command = run_process([sys.executable, "-m", "mirrorspec", "publish", "--project-dir",
                           str(root), "-s", table_name, "-q"])
    for case in (bare, command):
        case.pop("output")
    return {"bare": bare, "publish": command,
            "beyond_bare_s": round(command["wall_s"] - bare["wall_s"], 2),
            "beyond_bare_cpu_s": round(command["cpu_s"] - bare["cpu_s"], 2)}


def _ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b > 0 else float("inf")


def _first_load_check(spark, plan, table, landing: Path, pairs: int) -> dict:
    """`pairs` warm publishes with and without the first load's insert-key check, alternating
    which goes first; the median run of each and all wall times."""
    import statistics

    from mirrorspec.spark.publish import replays

    check = replays.first_load_keys_unique
    walls: dict[str, list] = {"key_check": [], "no_key_check": []}
    try:
        for i in range(pairs):
            for name in (("key_check", "no_key_check") if i % 2 == 0 else
                         ("no_key_check", "key_check")):
                replays.first_load_keys_unique = check if name == "key_check" else \
                    (lambda changes, keys: True)
                walls[name].append(_publish(spark, plan, table, landing / f"{name}{i}"))
    finally:
        replays.first_load_keys_unique = check
    out = {}
    for name, runs in walls.items():
        middle = statistics.median_low([r["seconds"] for r in runs])
        out[name] = dict(next(r for r in runs if r["seconds"] == middle),
                         all_seconds=[r["seconds"] for r in runs])
    out["ratio"] = _ratio(out["key_check"]["seconds"], out["no_key_check"]["seconds"])
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M changes per feed")
    parser.add_argument("--feeds", default="qlik,arcion")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--whole-command", action="store_true",
                        help="also time `mirrorspec publish` as a process beside a bare Spark start")
    parser.add_argument("--python-parser", type=int, default=0, metavar="N",
                        help="also publish each feed N times with and N times without its "
                             "column-wise path, alternating; and time one chunk of each")
    parser.add_argument("--first-load-check", type=int, default=0, metavar="N",
                        help="also publish each feed N times with and N times without the first "
                             "load's insert-key check, alternating")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args(argv)
    changes = max(100, int(1_000_000 * args.scale))
    feeds = tuple(f.strip() for f in args.feeds.split(",") if f.strip())
    work = Path(args.workdir or tempfile.mkdtemp(prefix="mirrorspec-publish-bench-"))
    figures: dict = {"bench": "publish", "scale": args.scale, "changes_per_feed": changes,
                     "machine": machine()}
    try:
        with timed() as gen:
            root = work / "project"
            generate_project(root, changes, args.master, feeds)
        figures["generate_s"] = round(gen.seconds, 2)
        for feed in feeds:
            folder = root / "feed" / feed
            figures.setdefault(feed, {})["feed_bytes"] = sum(
                f.stat().st_size for f in folder.iterdir())
            figures[feed]["pyarrow"] = pyarrow_reference(feed, folder, work / f"{feed}.parquet")
            if args.whole_command:
                figures[feed]["whole_command"] = whole_commands(root, TABLES[feed])
        plan = compile_plan(root)
        spark = spark_session(args.master, args.driver_memory, app_name="publish-bench")
        spark.range(1).count()  # JVM and session up before the clock starts
        for feed in feeds:
            table = next(t for t in plan.tables if t.name == TABLES[feed])
            runs = figures[feed]
            landing = work / "landings" / feed
            # the first publish of the session pays the reader's cold code paths (JIT, Python
            # workers); the second is the steady state of a long `run` or `--watch`
            runs["first"] = _publish(spark, plan, table, landing / "first")
            runs["warm"] = _publish(spark, plan, table, landing / "warm")
            if args.first_load_check:
                runs["first_load_check"] = _first_load_check(spark, plan, table, landing,
                                                              args.first_load_check)
            if args.python_parser:  # the column-wise paths' baseline
                runs.update(_alternate(spark, plan, table, landing, args.python_parser))
                runs["chunk"] = chunk_cpu(feed, root / "feed" / feed, table)
            for name in ("first", "warm", "python_parser", "columnwise"):
                if name in runs:
                    runs[name]["changes_per_s"] = rate(changes, runs[name]["seconds"])
                    runs[name]["changes_per_cpu_s"] = rate(changes, runs[name]["cpu_s"])
            arrow = runs["pyarrow"]
            runs["ratio_to_pyarrow"] = {"warm_wall": _ratio(runs["warm"]["seconds"], arrow["seconds"]),
                                        "warm_cpu": _ratio(runs["warm"]["cpu_s"], arrow["cpu_s"])}
            if "whole_command" in runs:
                runs["ratio_to_pyarrow"]["beyond_bare_wall"] = _ratio(
                    runs["whole_command"]["beyond_bare_s"], arrow["seconds"])
            if not args.json:
                _print(feed, changes, runs)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return emit(figures, args.json)


def _print(feed: str, changes: int, runs: dict) -> None:
    print(f"{feed}: {changes:,} changes, {fmt_bytes(runs['feed_bytes'])} in {FILES} files")
    arrow = runs["pyarrow"]
    print(f"  pyarrow read + Parquet write   {arrow['seconds']:6.2f} s  (CPU {arrow['cpu_s']:.2f} s)")
    labels = {"first": "publish, first in session", "warm": "publish, warm",
              "columnwise": "column-wise, median of A/B", "python_parser": "Python parser, median"}
    for name, label in labels.items():
        if name in runs:
            run = runs[name]
            print(f"  {label:<30} {run['seconds']:6.2f} s  (CPU {run['cpu_s']:.2f} s)  "
                  f"{run['changes_per_s']:>10,.0f} changes/s  ×{_ratio(run['seconds'], arrow['seconds'])}"
                  f" pyarrow (CPU ×{_ratio(run['cpu_s'], arrow['cpu_s'])}), "
                  f"peak RSS {fmt_bytes(run['peak_rss'])}")
    if "chunk" in runs:
        chunk = runs["chunk"]
        print(f"  one {fmt_bytes(chunk['chunk_bytes'])} chunk in this process: Python parser "
              f"{chunk['python_parser']['us_per_change']} µs CPU per change, column-wise "
              f"{chunk['columnwise']['us_per_change']} µs "
              f"({chunk['columnwise']['changes']:,} changes)")
    if "first_load_check" in runs:
        ab = runs["first_load_check"]
        print(f"  first load, insert-key check   {ab['key_check']['seconds']:6.2f} s, without "
              f"{ab['no_key_check']['seconds']:.2f} s (medians; ×{ab['ratio']}; all "
              f"{ab['key_check']['all_seconds']} / {ab['no_key_check']['all_seconds']})")
    if "whole_command" in runs:
        whole = runs["whole_command"]
        print(f"  whole command `mirrorspec publish` {whole['publish']['wall_s']:.2f} s "
              f"(CPU {whole['publish']['cpu_s']:.2f} s), bare Spark start {whole['bare']['wall_s']:.2f} s "
              f"(CPU {whole['bare']['cpu_s']:.2f} s): beyond it {whole['beyond_bare_s']:.2f} s = "
              f"×{runs['ratio_to_pyarrow']['beyond_bare_wall']} pyarrow")


if __name__ == "__main__":
    main()
