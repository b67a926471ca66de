"""Publish benchmark (issue 6): CDC feed files → landing zone, through `publish_table`.

At --scale 1.0: 1M Qlik Replicate data messages (JSON lines, 10 files; 50% INSERT, 35% UPDATE
with beforeData, 15% DELETE, transactions of 10 events) and 1M Arcion realtime CSV rows (3x+3
columns, 10 files, same mix). Each feed is published into an open-mirroring landing zone by
`mirrorspec.spark.publisher.publish_table` in one warm SparkSession; the figure is changes/s
from "feed files present" to "landing file renamed into place" (the JVM start is not counted,
the first-touch cost of the reader is). Target: ≥ 100k changes/s on 2 cores.

    .venv/bin/python bench/publish_bench.py --scale 0.1 [--json] [--feeds qlik,arcion]

`generate_project()` is reused by bench/e2e_bench.py.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
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
            cursor = (f'"{{""extractorId"":0,""timestamp"":{1620787841959 + i},'
                      f'""mutId"":{i},""partNum"":1,""v"":2}}"')
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


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M changes per feed")
    parser.add_argument("--feeds", default="qlik,arcion")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--workdir", default=None)
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
        plan = compile_plan(root)
        spark = spark_session(args.master, args.driver_memory, app_name="publish-bench")
        spark.range(1).count()  # JVM and session up before the clock starts
        from mirrorspec.spark.publisher import publish_table

        for feed, table_name in TABLES.items():
            if feed not in feeds:
                continue
            table = next(t for t in plan.tables if t.name == table_name)
            with PeakMemory() as memory, CpuTime() as cpu, timed() as clock:
                result = publish_table(spark, table, plan)
            if result.status != "Published":
                raise SystemExit(f"publish of {feed} failed: {result.error}")
            landed = sum(f.stat().st_size for f in Path(table.landing_path).glob("*.parquet"))
            figures[feed] = {"seconds": round(clock.seconds, 2),
                             "changes_per_s": rate(changes, clock.seconds),
                             "cpu_s": round(cpu.seconds, 2),
                             "changes_per_cpu_s": rate(changes, cpu.seconds),
                             "landing_rows": result.rows, "landing_bytes": landed,
                             "peak_rss": fmt_bytes(memory.peak)}
            if not args.json:
                print(f"{feed}: {changes:,} changes → {result.rows:,} landing rows in "
                      f"{clock.seconds:.1f} s = {changes / clock.seconds:,.0f} changes/s ({cpu.seconds:.1f} "
                      f"CPU s), "
                      f"peak RSS {fmt_bytes(memory.peak)}")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
