"""Reconcile a mirrored Delta table with a trusted snapshot of its source, by key.

Cheap first: row counts and, per key range (a bucket of the key hash), the count and the sum of
row hashes on both sides. Only the buckets that differ are joined to name the differing keys:
missing (in the source, not in the mirror), extra (in the mirror only) and changed (with the
columns that differ). Source columns are cast to the mirror's types before anything is compared.
"""

from __future__ import annotations

import os
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from mirrorspec.artifacts.plan import SECRET_PREFIX
from mirrorspec.artifacts.reconciliation import BUCKETS, Reconciliation
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.security.jdbc_urls import redact
from mirrorspec.base.logfile import log_exception
from mirrorspec.spark.mirror.batch import EMPTY_CELL, col
from mirrorspec.spark.platform.live import LiveProgress, begin

JDBC_DRIVERS = {"jdbc:postgresql:": "org.postgresql.Driver"}
_DUP = "__duplicate"
_NULL = "\u0000null"  # what a NULL hashes as (never equal to any text, "" included)


# --- reading both sides ------------------------------------------------------------------------

def read_mirror(spark: SparkSession, path: str, version: int | None = None,
                timestamp: str | None = None) -> DataFrame:
    """The mirrored Delta table, optionally as of a version or timestamp."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    if timestamp is not None:
        reader = reader.option("timestampAsOf", timestamp)
    return reader.load(path)


def secret(name: str) -> str:
    """The value of a `MIRRORSPEC_SECRET_*` environment variable (never printed)."""
    if not name.startswith(SECRET_PREFIX):
        raise MirrorspecError(f"{name} is not a {SECRET_PREFIX}* variable",
                              hint=f"keep credentials in {SECRET_PREFIX}* environment variables")
    value = os.environ.get(name)
    if value is None:
        raise MirrorspecError(f"the environment variable {name} is not set",
                              hint=f"export {name}=... before running reconcile")
    return value


def driver_message(exc: BaseException) -> str:
    """The JDBC driver's own words for a failed read ("Connection to … refused", "password
    authentication failed …", "relation … does not exist"): the deepest `…SQLException` of the
    Java cause chain, with the root cause when that is another, instead of Py4J's "An error
    occurred while calling o67.load."."""
    java = getattr(exc, "java_exception", None)
    chain: list[tuple[str, str]] = []
    try:
        while java is not None and len(chain) < 20:
            message = str(java.getMessage() or "").strip()
            chain.append((str(java.getClass().getSimpleName()), message.splitlines()[0]
                          if message else ""))
            java = java.getCause()
    except Exception:  # noqa: BLE001 - the JVM may be gone: what was read, or Python's text
        java = None
    if not chain:
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__
    spell = lambda kind, message: f"{kind}: {message}" if message else kind  # noqa: E731
    driver = next((c for c in reversed(chain) if "SQL" in c[0]), chain[-1])
    root = chain[-1]
    return spell(*driver) + (f" ({spell(*root)})" if root != driver else "")


def read_source(spark: SparkSession, source: str, dbtable: str | None = None,
                user_secret: str | None = None, password_secret: str | None = None,
                source_format: str | None = None) -> DataFrame:
    """The trusted snapshot: a Delta, Parquet or CSV path, or a JDBC table (`jdbc:` URL)."""
    if source.startswith("jdbc:"):
        if not dbtable:
            raise MirrorspecError("a jdbc: source needs --dbtable (the source table's name)")
        reader = (spark.read.format("jdbc").option("url", source).option("dbtable", dbtable)
                  .option("preferTimestampNTZ", True))
        if user_secret:
            reader = reader.option("user", secret(user_secret))
        if password_secret:
            reader = reader.option("password", secret(password_secret))
        driver = next((d for prefix, d in JDBC_DRIVERS.items() if source.startswith(prefix)), None)
        if driver:  # spark.jars' driver is not visible to DriverManager without its class name
            reader = reader.option("driver", driver)
        try:
            return reader.load()
        except Exception as exc:  # noqa: BLE001 - a connection or table problem the user fixes
            secrets = [os.environ.get(n) for n in (user_secret, password_secret) if n]
            scrub = lambda text: redact(text, secrets)  # noqa: E731
            log = log_exception(f"reconcile: reading {dbtable} from {scrub(source)}", exc,
                                scrub=scrub)
            first = scrub(driver_message(exc).splitlines()[0])
            raise MirrorspecError(f"cannot read {dbtable} from {scrub(source)}: {first[:300]}",
                                  hint="check the URL, the table name and the credentials' "
                                       f"environment variables (the driver's trace: {log})") \
                from None
    local = source[len("file:"):] if source.startswith("file:") else source
    if "://" not in source and not os.path.exists(local):
        raise MirrorspecError(f"{source}: the source snapshot does not exist",
                              hint="pass a Delta/Parquet/CSV path or a jdbc: URL")
    kind = source_format or _format_of(local)
    if kind == "delta":
        return spark.read.format("delta").load(source)
    if kind == "csv":  # an empty unquoted cell is NULL, a quoted "" an empty string
        df = (spark.read.option("header", True).option("multiLine", True)
              .option("nullValue", EMPTY_CELL).option("emptyValue", "").csv(source))
        return df.select(*[F.when(col(c) == F.lit(EMPTY_CELL), F.lit(None)).otherwise(col(c))
                           .alias(c) for c in df.columns])
    return spark.read.parquet(source)


def _format_of(path: str) -> str:
    if os.path.isdir(os.path.join(path, "_delta_log")):
        return "delta"
    names = [path] if os.path.isfile(path) else [
        n for n in (os.listdir(path) if os.path.isdir(path) else []) if not n.startswith(("_", "."))]
    if names and all(n.lower().endswith((".csv", ".csv.gz", ".tsv")) for n in names):
        return "csv"
    return "parquet"


# --- comparing ----------------------------------------------------------------------------------

def _text(column):
    """A value as text for hashing and comparing (timestamps at microsecond precision)."""
    return F.coalesce(column.cast("string"), F.lit(_NULL))


def reconcile(spark: SparkSession, mirror: DataFrame, source: DataFrame, key: list[str],
              table: str, source_name: str, version: int | None = None,
              progress: LiveProgress | None = None) -> Reconciliation:
    """Compare `mirror` with `source` by `key` (column names matched case-insensitively).
    `progress` hears its steps: counting rows per key range, then (when some differ) naming
    the differing keys."""
    result = Reconciliation(table, source_name, list(key), version=version)
    mirror_cols = {f.name.lower(): f for f in mirror.schema.fields}
    source_cols = {f.name.lower(): f for f in source.schema.fields}
    result.only_in_mirror = [f.name for n, f in mirror_cols.items() if n not in source_cols]
    result.only_in_source = [f.name for n, f in source_cols.items() if n not in mirror_cols]
    missing_keys = [k for k in key if k.lower() not in mirror_cols or k.lower() not in source_cols]
    if missing_keys:
        raise MirrorspecError(f"key column(s) {', '.join(missing_keys)} not on both sides",
                              hint="pass --key with columns the mirror and the source share")
    common = [f.name for n, f in mirror_cols.items() if n in source_cols]
    multiset = not key  # keyless: rows compared as a multiset (duplicates numbered)
    keys = [mirror_cols[k.lower()].name for k in key] if key else common + [_DUP]
    values = [c for c in common if c not in keys]

    def aligned(df: DataFrame, fields: dict, cast: bool) -> DataFrame:
        out = []
        for name in common:
            column = col(fields[name.lower()].name)
            target = mirror_cols[name.lower()].dataType
            if cast and fields[name.lower()].dataType != target:
                column = _cast_to(column, fields[name.lower()].dataType, target)
            out.append(column.alias(name))
        df = df.select(*out)
        if multiset:
            window = Window.partitionBy(*[col(c) for c in common]).orderBy(F.lit(1))
            df = df.withColumn(_DUP, F.row_number().over(window))
        key_hash = F.xxhash64(*[_text(col(k)) for k in keys])
        row_hash = F.xxhash64(*[_text(col(c)) for c in values]) if values else F.lit(0)
        return (df.withColumn("__bucket", F.pmod(key_hash, F.lit(BUCKETS)))
                  .withColumn("__hash", row_hash.cast("decimal(38,0)")))

    counting = begin(progress, table, "count", "counting rows per key range")
    left = aligned(mirror, mirror_cols, False).cache()  # planning both sides takes seconds too
    right = aligned(source, source_cols, True).cache()
    try:
        sums = lambda df: {r["__bucket"]: (r["n"], r["h"]) for r in df.groupBy("__bucket").agg(  # noqa: E731
            F.count(F.lit(1)).alias("n"), F.sum("__hash").alias("h")).collect()}
        left_sums, right_sums = sums(left), sums(right)
        result.mirror_rows = sum(n for n, _ in left_sums.values())
        result.source_rows = sum(n for n, _ in right_sums.values())
        differing = sorted(b for b in set(left_sums) | set(right_sums)
                           if left_sums.get(b) != right_sums.get(b))
        result.differing_buckets = len(differing)
        counting.done(f"counted rows: mirror {result.mirror_rows}, source {result.source_rows}; "
                      f"{len(differing)} of {BUCKETS} key ranges differ",
                      mirror_rows=result.mirror_rows, source_rows=result.source_rows,
                      differing_key_ranges=len(differing))
        if differing:
            if progress is not None:
                progress.add_total(1)
            naming = begin(progress, table, "name", "naming the differing keys")
            _differences(result, left, right, keys, values, differing)
            naming.done(f"named the differing keys: missing {len(result.missing)}, extra "
                        f"{len(result.extra)}, changed {len(result.changed)}",
                        missing=len(result.missing), extra=len(result.extra),
                        changed=len(result.changed))
    finally:
        left.unpersist()
        right.unpersist()
    return result


def _cast_to(column, source_type: T.DataType, target: T.DataType):
    """A source column as the mirror's type: strings are parsed (try_cast), timestamps with a
    zone become the session zone's wall clock when the mirror keeps timestamps without one."""
    if isinstance(source_type, T.StringType) and not isinstance(target, T.StringType):
        return column.try_cast(target)
    return column.cast(target)


def _differences(result: Reconciliation, left: DataFrame, right: DataFrame, keys: list[str],
                 values: list[str], buckets: list[int]) -> None:
    """Join the differing buckets by key and sort each differing key into its list."""
    l = left.filter(F.col("__bucket").isin(buckets)).alias("m")
    r = right.filter(F.col("__bucket").isin(buckets)).alias("s")
    condition = None
    for k in keys:
        test = F.col(f"m.`{k}`").eqNullSafe(F.col(f"s.`{k}`"))
        condition = test if condition is None else condition & test
    joined = l.join(r, condition, "full_outer")
    in_m = F.col("m.__hash").isNotNull()
    in_s = F.col("s.__hash").isNotNull()
    diff_cols = [F.when(~_text(F.col(f"m.`{c}`")).eqNullSafe(_text(F.col(f"s.`{c}`"))),
                        F.lit(c)) for c in values]
    selected = joined.where(~(in_m & in_s) | (F.col("m.__hash") != F.col("s.__hash"))).select(
        *[F.coalesce(F.col(f"m.`{k}`"), F.col(f"s.`{k}`")).alias(k) for k in keys],
        in_m.alias("__in_m"), in_s.alias("__in_s"),
        (F.array_compact(F.array(*diff_cols)) if diff_cols else F.array()).alias("__cols"))
    for row in selected.orderBy(*keys).collect():
        key = {k: _plain(row[k]) for k in keys if k != _DUP}
        if row["__in_m"] and row["__in_s"]:
            result.changed.append({"key": key, "columns": list(row["__cols"])})
        elif row["__in_s"]:
            result.missing.append(key)
        else:
            result.extra.append(key)


def _plain(value: Any) -> Any:
    """A key value JSON can carry."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
