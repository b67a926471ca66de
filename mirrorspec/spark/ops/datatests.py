"""Data tests on the mirrored Delta tables, reported like dbt (PASS / WARN / FAIL / ERROR).

Tests come compiled in `TablePlan.tests` as `{"type", "severity", ...params}`:

- `unique {columns}` (default: the key columns): no two rows share those values;
  failures = number of duplicated value combinations.
- `not_null {columns}` (default: the key columns): failures = rows with a NULL in any of them.
- `accepted_values {column, values}`: failures = rows whose non-NULL value is not listed.
- `relationships {column, to, field}`: failures = rows whose non-NULL value has no row in the
  table `to` (unique id or name) with `field` equal to it.
- `row_count {}`: the Delta table's row count against what the landing zone implies — every
  landing file the engine applied (those in `_ProcessedFiles/` and those still in the folder up
  to the last applied one) replayed per key with the marker semantics (insert adds a row;
  update/upsert leaves the count, or makes it 1 when the key had none; delete makes it 0).
  ERROR when the history is incomplete (files purged from `_ProcessedFiles` after retention).
- `freshness {max_age_seconds}`: the table's `lastSyncDateTime` in the monitoring JSON is at
  most that old.

A test that fails with severity `warn` reports WARN; `error` reports FAIL. A test that cannot run
(table not mirrored yet, unknown column…) reports ERROR. `TestResults.failed` is true for FAIL or
ERROR: the `test` command then exits 1.
"""

from __future__ import annotations

import contextlib
import threading
import time
from mirrorspec.base.interrupts import worker_pool
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from mirrorspec.openmirroring import mirroring
from mirrorspec.compile import PlanContext
from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.base.console import Console, NullConsole
from mirrorspec.base.errors import DataTestError, MirrorspecError
from mirrorspec.landing.processed import applied_files
from mirrorspec.artifacts.data_test_results import TEST_TYPES, DataTestResult, TestResults, test_name

def run_data_tests(spark, plan: Plan, tables: Iterable[TablePlan], console: Console | None = None,
                   skip: Mapping[str, str] | Iterable[str] = (), threads: int = 4) -> TestResults:
    """Run the tests of `tables` (tables in `skip` get SKIPPED tests; a mapping gives the
    reason), `threads` at a time, and report each as it finishes. Results keep the declaration
    order."""
    console = console or NullConsole()
    started = time.monotonic()
    skip = dict(skip) if isinstance(skip, Mapping) else dict.fromkeys(skip, "the table failed to run")
    todo = [(t, test) for t in tables for test in t.tests]
    status_doc = (_read_status(plan) if any(test.get("type") == "freshness" for _, test in todo)
                  else None)
    lock = threading.Lock()
    finished = [0]

    def one(item: tuple[TablePlan, dict[str, Any]]) -> DataTestResult:
        result = _run_test(spark, plan, item[0], item[1], status_doc, skip)
        with lock:
            finished[0] += 1
            _report(console, finished[0], len(todo), result)
        return result

    if threads <= 1 or len(todo) <= 1:
        done = [one(item) for item in todo]
    else:
        with worker_pool(threads, "mirrorspec-test") as pool:
            done = list(pool.map(one, todo))
    results = TestResults(done)
    results.elapsed_time = time.monotonic() - started
    return results


def _run_test(spark, plan: Plan, table: TablePlan, test: dict[str, Any],
              status_doc: dict[str, Any] | None, skip: Mapping[str, str]) -> DataTestResult:
    severity = str(test.get("severity") or "error").lower()
    params = {k: v for k, v in test.items() if k not in ("type", "severity")}
    result = DataTestResult(test_name(table, test), table.unique_id, str(test.get("type")),
                            severity, "pass", params=params)
    t0 = time.monotonic()
    if table.unique_id in skip:
        result.status = "skipped"
        result.message = skip[table.unique_id]
        return result
    try:
        failures, message = _run_one(spark, plan, table, test, status_doc)
        result.failures, result.message = failures, message
        if failures:
            result.status = "warn" if severity == "warn" else "fail"
    except MirrorspecError as exc:
        result.status, result.message = "error", exc.render()
    except Exception as exc:  # noqa: BLE001 - a broken test must not stop the others
        result.status, result.message = "error", f"{type(exc).__name__}: {exc}"
    result.execution_time = time.monotonic() - t0
    return result


def _report(console: Console, index: int, total: int, result: DataTestResult) -> None:
    label = result.status.upper() if result.status != "skipped" else "SKIP"
    shown = f"{label} {result.failures}" if result.status in ("fail", "warn") else label
    text = f"{index} of {total} {shown} {result.name} [{result.execution_time:.2f}s]"
    if result.message and result.status != "pass":
        text += f"\n    {result.message}"
    kind = {"pass": "success", "warn": "warning", "fail": "error", "error": "error",
            "skipped": "info"}[result.status]
    if console.log_format == "json":
        kind = "test_result"
    console.event(kind, text, test=result.name, table=result.table, status=result.status,
                  failures=result.failures, severity=result.severity)


# --- the tests ---------------------------------------------------------------------------------

def _run_one(spark, plan: Plan, table: TablePlan, test: dict[str, Any],
             status_doc: dict[str, Any] | None) -> tuple[int, str]:
    kind = test.get("type")
    if kind == "freshness":
        return _freshness(table, test, status_doc or {})
    if kind not in TEST_TYPES:
        raise DataTestError(f"unknown data test type {kind!r}; expected one of "
                            f"{', '.join(TEST_TYPES)}")
    df = read_delta(spark, table)
    if kind == "unique":
        return _unique(df, table, test)
    if kind == "not_null":
        return _not_null(df, table, test)
    if kind == "accepted_values":
        return _accepted_values(df, table, test)
    if kind == "relationships":
        return _relationships(spark, plan, df, table, test)
    return _row_count(spark, df, table)


def read_delta(spark, table: TablePlan):
    """The table's Delta table as a DataFrame; DataTestError when it isn't mirrored yet."""
    from mirrorspec.base.files import join
    from mirrorspec.spark.platform.hadoop_fs import filesystem_for

    # the log's folder, not DeltaTable.isDeltaTable: that needs the JVM here (no Spark Connect)
    if not filesystem_for(table.delta_path, spark).is_dir(join(table.delta_path, "_delta_log")):
        raise DataTestError(f"{table.unique_id} has no Delta table at {table.delta_path}",
                            hint="run `mirrorspec run` first")
    return spark.read.format("delta").load(table.delta_path)


def _columns(df, table: TablePlan, names: Any, what: str) -> list[str]:
    if isinstance(names, str):
        names = [names]
    names = list(names or [])
    if not names:
        raise DataTestError(f"{what} on {table.unique_id}: no columns given and the table has "
                            "no key columns", hint="give columns: [...]")
    by_lower = {c.lower(): c for c in df.columns}
    resolved = []
    for name in names:
        actual = by_lower.get(str(name).lower())
        if actual is None:
            raise DataTestError(f"{what} on {table.unique_id}: no column {name!r} in the Delta "
                                f"table (columns: {', '.join(df.columns)})")
        resolved.append(actual)
    return resolved


def _show(values: list[Any]) -> str:
    return "(" + ", ".join(repr(v) for v in values) + ")" if len(values) != 1 else repr(values[0])


def _unique(df, table: TablePlan, test: dict[str, Any]) -> tuple[int, str]:
    from pyspark.sql import functions as F

    cols = _columns(df, table, test.get("columns") or table.key_columns, "unique")
    dups = df.groupBy(*cols).agg(F.count(F.lit(1)).alias("_n")).where("_n > 1")
    count = dups.count()
    if not count:
        return 0, ""
    examples = dups.orderBy(F.col("_n").desc()).limit(3).collect()
    shown = ", ".join(f"{_show([row[c] for c in cols])} x{row['_n']}" for row in examples)
    return count, f"{count} duplicated value(s) of {', '.join(cols)}, e.g. {shown}"


def _not_null(df, table: TablePlan, test: dict[str, Any]) -> tuple[int, str]:
    from pyspark.sql import functions as F

    cols = _columns(df, table, test.get("columns") or test.get("column") or table.key_columns,
                    "not_null")
    aggs = [F.sum(F.when(F.col(c).isNull(), 1).otherwise(0)).alias(c) for c in cols]
    any_null = F.sum(F.when(F.greatest(*[F.col(c).isNull().cast("int") for c in cols]) == 1, 1)
                     .otherwise(0)) if len(cols) > 1 else F.sum(
        F.when(F.col(cols[0]).isNull(), 1).otherwise(0))
    row = df.agg(*aggs, any_null.alias("_rows")).collect()[0]
    rows = int(row["_rows"] or 0)
    if not rows:
        return 0, ""
    detail = ", ".join(f"{c}: {int(row[c] or 0)}" for c in cols if row[c])
    return rows, f"{rows} row(s) with NULL ({detail})"


def _accepted_values(df, table: TablePlan, test: dict[str, Any]) -> tuple[int, str]:
    from pyspark.sql import functions as F

    if "column" not in test or "values" not in test:
        raise DataTestError(f"accepted_values on {table.unique_id} needs column and values")
    column = _columns(df, table, [test["column"]], "accepted_values")[0]
    values = list(test["values"])
    bad = df.where(F.col(column).isNotNull() & ~F.col(column).isin(values))
    counts = bad.groupBy(column).count().orderBy(F.col("count").desc()).limit(5).collect()
    total = sum(int(r["count"]) for r in bad.groupBy(column).count().collect()) if counts else 0
    if not total:
        return 0, ""
    shown = ", ".join(f"{r[column]!r} x{r['count']}" for r in counts)
    return total, f"{total} row(s) of {column} not in {values}: {shown}"


def _relationships(spark, plan: Plan, df, table: TablePlan, test: dict[str, Any]
                   ) -> tuple[int, str]:
    from pyspark.sql import functions as F

    from mirrorspec.project.selection import resolve_table

    for key in ("column", "to"):
        if not test.get(key):
            raise DataTestError(f"relationships on {table.unique_id} needs {key}")
    column = _columns(df, table, [test["column"]], "relationships")[0]
    parent = resolve_table(plan, str(test["to"]))
    parent_df = read_delta(spark, parent)
    field_name = _columns(parent_df, parent, [test.get("field") or test["column"]],
                          "relationships")[0]
    keys = parent_df.select(F.col(field_name).alias("_parent_key")).distinct()
    orphans = (df.where(F.col(column).isNotNull())
               .join(keys, F.col(column) == F.col("_parent_key"), "left_anti"))
    count = orphans.count()
    if not count:
        return 0, ""
    examples = [r[column] for r in orphans.select(column).distinct().limit(3).collect()]
    return count, (f"{count} row(s) whose {column} has no {parent.unique_id}.{field_name}, "
                   f"e.g. {', '.join(repr(v) for v in examples)}")


def _read_status(plan: Plan) -> dict[str, Any]:
    from mirrorspec.artifacts.status import read_status

    return read_status(plan.warehouse) or {}


def status_entry(status_doc: dict[str, Any], table: TablePlan) -> dict[str, Any] | None:
    """The table's entry in the monitoring JSON (tables.json), or None."""
    tables = status_doc.get("tables", status_doc)
    if isinstance(tables, dict):
        tables = tables.get("tables", [])
    for entry in tables or []:
        if not isinstance(entry, dict):
            continue
        schema = mirroring.warehouse_schema(entry.get("sourceSchemaName") or None)
        if f"{schema}.{entry.get('sourceTableName')}".lower() == table.unique_id.lower():
            return entry
    return None


def _parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _freshness(table: TablePlan, test: dict[str, Any], status_doc: dict[str, Any]
               ) -> tuple[int, str]:
    bound = test.get("max_age_seconds")
    if bound is None:
        raise DataTestError(f"freshness on {table.unique_id} needs max_age_seconds")
    entry = status_entry(status_doc, table)
    last = ((entry or {}).get("metrics") or {}).get("lastSyncDateTime")
    if not last:
        return 1, f"{table.unique_id} has no lastSyncDateTime in the monitoring JSON (never synced)"
    age = (datetime.now(timezone.utc) - _parse_time(last)).total_seconds()
    if age > float(bound):
        return 1, (f"last synced {last}, {age:,.0f}s ago; the bound is {float(bound):,.0f}s")
    return 0, f"last synced {age:,.0f}s ago"


# --- row_count: replay the applied landing files -------------------------------------------------

def expected_row_count(changes, key_columns: list[str]) -> int:
    """Rows a table holds after `changes` (key columns, `__marker`, `__file_order`,
    `__row_order`) are applied to an empty table, per the marker semantics."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    marker = F.col("__marker")
    if not key_columns:
        return int(changes.where(marker == 0).count())
    pos = F.struct(F.col("__file_order"), F.col("__row_order"))
    last_delete = F.max(F.when(marker == 2, pos)).over(Window.partitionBy(*key_columns))
    live = (changes.withColumn("_pos", pos).withColumn("_last_delete", last_delete)
            .where(F.col("_last_delete").isNull() | (F.col("_pos") > F.col("_last_delete"))))
    per_key = live.groupBy(*key_columns).agg(
        F.sum(F.when(marker == 0, 1).otherwise(0)).alias("_inserts"),
        F.min_by(marker, F.col("_pos")).alias("_first"))
    total = per_key.agg(F.sum(F.col("_inserts") + F.when(F.col("_first").isin(1, 4), 1)
                              .otherwise(0)).alias("n")).collect()[0]["n"]
    return int(total or 0)


@contextlib.contextmanager
def applied_changes(spark, table: TablePlan):
    """Within the block, (the change rows, the key columns) of every landing file applied to
    the table, read with the engine's reader from the table folder or its `_ProcessedFiles/`.
    DataTestError when one of them is gone (purged after the retention)."""
    from pyspark.sql import types as T

    from mirrorspec.spark.mirror import decompressed, batch as reader

    from mirrorspec.landing import layout as landing
    from mirrorspec.spark.platform import hadoop_fs

    filesystem = hadoop_fs.filesystem_for(table.landing_path, spark)
    metadata = landing.read_metadata(filesystem, table.landing_path)
    applied = applied_files(filesystem, hadoop_fs.filesystem_for(table.delta_path, spark),
                            table.delta_path, table.landing_path, metadata)
    if applied.missing:
        raise DataTestError(
            f"row_count on {table.unique_id}: {len(applied.missing)} applied landing file(s) are "
            f"no longer in the landing zone (first: {applied.missing[0]}); files are purged from "
            f"{mirroring.PROCESSED_FOLDER} after the retention, so the count can't be reconciled")
    schemas = [reader.file_schema(spark, filesystem, file, metadata) for file in applied.files]
    keys = {k.lower() for k in metadata.key_columns}
    union: dict[str, T.StructField] = {}
    for schema in schemas:
        for f in schema.fields:
            if f.name.lower() in keys and f.name.lower() not in union:
                union[f.name.lower()] = f
    if not schemas:
        yield None, list(metadata.key_columns)
        return
    with decompressed.readable(filesystem, hadoop_fs.filesystem_for(table.delta_path, spark),
                               table.delta_path, schemas):
        yield (reader.read_changes(spark, schemas, list(union.values()), metadata),
               [union[k.lower()].name for k in metadata.key_columns if k.lower() in union])


def _row_count(spark, df, table: TablePlan) -> tuple[int, str]:
    with applied_changes(spark, table) as (changes, keys):
        expected = 0 if changes is None else expected_row_count(changes, keys)
    actual = df.count()
    if actual == expected:
        return 0, f"{actual} row(s), as the applied landing files imply"
    return abs(actual - expected), (f"the Delta table holds {actual} row(s); the landing files "
                                    f"applied to it imply {expected}")


def execute_tests(console: Console, ctx: PlanContext, table_ids: Iterable[str],
                  skip: Mapping[str, str] | Iterable[str] = (), threads: int = 4,
                  warm: bool = True):
    """Run the tests of the given tables, print the dbt-style summary, write test_results.json.
    `warm`: use the warm Spark server when one runs for the plan's settings (the CLI's
    default; the Python API asks for it with `Project(warm_server=True)`)."""
    from mirrorspec.spark.platform.session import start_session

    wanted = set(table_ids)
    tables = [t for t in ctx.plan.tables if t.unique_id in wanted]
    if not any(t.tests for t in tables):
        console.warning("no data tests declared on the selected tables")
        results = run_data_tests(None, ctx.plan, [], console)
    else:
        results = run_data_tests(start_session(ctx.plan, console, warm=warm), ctx.plan, tables,
                                 console,
                                 skip=skip, threads=threads)
    path = results.write(ctx.target_dir)
    counts = results.counts()
    console.result(f"Done. PASS={counts['pass']} WARN={counts['warn']} ERROR={counts['error']} "
                   f"FAIL={counts['fail']} SKIP={counts['skipped']} TOTAL={len(results.results)}"
                   f"; results in {path}", counts=counts)
    return results
