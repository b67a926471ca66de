"""Spark readers of plain extracts (`csv`, `parquet`): the change set between snapshots.

Options, snapshot grouping and schema inference are the pure format in
`mirrorspec.sources.extract`; this module reads the snapshots with Spark and diffs them.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

from mirrorspec.base.errors import SourceError
from mirrorspec.openmirroring.mirroring import spark_type_for
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE, ReadResult, read_feed_bytes
from mirrorspec.base.delimited_text import cell_type_problem
from mirrorspec.sources.extract import (STATE_SNAPSHOT, CsvExtractFormat, ExtractOptions,
                                        ParquetExtractFormat, Snapshot, _exists, csv_key_lines,
                                        csv_malformed_line, csv_value_line, expected_type,
                                        feed_root, group_snapshots, parse_options,
                                        previous_snapshot)
from mirrorspec.spark.publish.completion import read_mirrored

FROM_NOTHING = "nothing (first snapshot)"  # `_previous`'s origin when no snapshot precedes

# --- reading one snapshot -------------------------------------------------------------

def _columns(table: Any) -> list[tuple[str, str]]:
    columns = [(c.name, c.type or "String") for c in table.columns]
    if not columns:
        raise SourceError(f"table {table.unique_id} has no columns",
                          hint="declare the columns in the YAML")
    return columns


def _keys(table: Any, opts: ExtractOptions, kind: str) -> list[str]:
    keys = list(table.key_columns or opts.key_columns)
    if not keys:
        raise SourceError(f"table {table.unique_id}: a {kind} extract needs key columns to tell "
                          f"updates and deletes apart",
                          hint="declare key_columns for the table")
    return keys


def _match_columns(available: Sequence[str], columns: Sequence[tuple[str, str]], file: str,
                   what: str) -> dict[str, str]:
    """Table column → the snapshot's column of that name (case-insensitive); all required."""
    by_lower = {name.lower(): name for name in available}
    missing = [name for name, _ in columns if name.lower() not in by_lower]
    if missing:
        raise SourceError(f"the extract's {what} lacks column(s) {', '.join(missing)}",
                          file=file,
                          hint="an extract is a full snapshot: it must carry every column of "
                               "the table (or fix the column names in the YAML)")
    return {name: by_lower[name.lower()] for name, _ in columns}


def _typed(raw_col, data_type: str, opts: ExtractOptions):
    """A string Column parsed as `data_type` (NULL where it doesn't parse)."""


    if data_type == "ByteArray":
        return F.try_to_binary(raw_col, F.lit(opts.binary_encoding))
    if data_type in ("DateTime", "ITime") and opts.timestamp_format:
        return F.try_to_timestamp(raw_col, F.lit(opts.timestamp_format))
    if data_type == "IDate" and opts.date_format:
        return F.try_to_timestamp(raw_col, F.lit(opts.date_format)).cast("date")
    return raw_col.try_cast(spark_type_for(data_type))


BAD_COLUMN = "__bad_row"  # a checked snapshot's first problem, found with its key checks


def _bad_row(typed: dict[str, Any], raw: dict[str, Any], *where: Any, or_where: Any = None,
             first: Any = None):
    """A column that is NULL on a good row and, on a row with a value that doesn't parse as its
    column's type (or, `or_where`, another problem), a struct whose minimum over the snapshot
    is the row to report: `first` (False sorts first), the `where` columns (its file, its
    place), `_bad` (the column) and the raw values. `_check_keys` takes that minimum in the
    same Spark job as the key checks."""

    checks = [F.when(raw[name].isNotNull() & typed[name].isNull(), F.lit(name))
              for name in typed]
    bad_column = F.coalesce(*checks) if checks else F.lit(None).cast("string")
    found = bad_column.isNotNull() if or_where is None else bad_column.isNotNull() | or_where
    order = first if first is not None else F.lit(True)
    return F.when(found, F.struct(order.alias("_first"), *where, bad_column.alias("_bad"),
                                  *[raw[n].alias(n) for n in raw]))


def local_header(file: str, opts: ExtractOptions) -> list[str] | None:
    """The header of a local UTF-8 CSV file read in Python (a Spark job less), or None where
    Spark must read it: a URI, another encoding, names empty or repeated (Spark renames those)."""
    import csv
    import codecs

    if "://" in file or codecs.lookup(opts.encoding).name != "utf-8":
        return None
    path = file[5:] if file.startswith("file:") else file
    escape = None if opts.escape == opts.quote else opts.escape
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            names = next(csv.reader(handle, delimiter=opts.delimiter, quotechar=opts.quote,
                                    doublequote=escape is None, escapechar=escape), None)
    except (OSError, UnicodeDecodeError, csv.Error, LookupError):
        return None
    if not names or any(not n for n in names) or \
            len({n.lower() for n in names}) != len(names):
        return None
    return names


_VALUE_HINT = "fix the value, or the column's type (or the extract's format options) in the YAML"

class CsvExtractReader(CsvExtractFormat):
    """`csv`: each new CSV extract (file or folder) is a full snapshot of the table."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """The change set of each new snapshot against the one before it."""
        return read_snapshots(self, spark, table, files, state)

    def read_snapshot(self, spark: Any, snapshot: Snapshot, columns, opts: ExtractOptions,
                      checked: bool = True):
        """(the snapshot's rows typed as the table's columns, explain). `checked`: the rows
        also carry BAD_COLUMN (a malformed record or a value not of its column's type) and
        `explain(bad)` is its error, which `_check_keys` raises (False, for a snapshot checked
        when it was published: no check, explain None)."""

        reader = (spark.read.option("sep", opts.delimiter).option("quote", opts.quote)
                  .option("escape", opts.escape).option("encoding", opts.encoding)
                  .option("nullValue", opts.null_value).option("multiLine", "true")
                  .option("mode", "PERMISSIVE"))
        files = list(snapshot.files)
        if opts.header:
            names = local_header(files[0], opts) or \
                reader.option("header", "true").csv(files[:1]).columns
            mapping = _match_columns(names, columns, snapshot.files[0], "header")
        else:
            names = [name for name, _ in columns]
            mapping = {name: name for name in names}
        schema = StructType([StructField(n, StringType()) for n in names]
                            + [StructField("_corrupt_record", StringType())])
        raw = (reader.option("header", str(opts.header).lower())
               .option("columnNameOfCorruptRecord", "_corrupt_record")
               .schema(schema).csv(files)
               .withColumn("_file", F.col("_metadata.file_path")))
        strings = {name: F.col(f"`{mapping[name]}`") for name, _ in columns}
        typed = {name: _typed(strings[name], data_type, opts) for name, data_type in columns}
        if not checked:
            return raw.select(*[typed[name].alias(name) for name, _ in columns]), None
        # a malformed record first, else a value of another type (a data column is selected
        # too: Spark refuses queries of the corrupt column alone)
        bad = _bad_row(typed, strings, F.col("_file"),
                       F.monotonically_increasing_id().alias("_pos"),
                       F.col("_corrupt_record").alias("_corrupt_record"),
                       or_where=F.col("_corrupt_record").isNotNull(),
                       first=F.col("_corrupt_record").isNull())

        def explain(bad: Any) -> SourceError:
            if bad["_corrupt_record"] is not None:
                record = bad["_corrupt_record"]
                file = _plain_name(bad["_file"], files)
                return SourceError(f"malformed CSV record (expected {len(names)} fields): "
                                   f"{record[:200]!r}", file=file,
                                   line=_line(file, lambda data: csv_malformed_line(
                                       data, file, opts, len(names))),
                                   hint="check the delimiter, quote and header options")
            return _csv_value_error(bad, dict(columns), names.index(mapping[bad["_bad"]]),
                                    _plain_name(bad["_file"], files), opts)
        return raw.select(*[typed[name].alias(name) for name, _ in columns],
                          bad.alias(BAD_COLUMN)), explain

class ParquetExtractReader(ParquetExtractFormat):
    """`parquet`: each new Parquet extract (file or folder of part files) is a full snapshot."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """The change set of each new snapshot against the one before it."""
        return read_snapshots(self, spark, table, files, state)

    def read_snapshot(self, spark: Any, snapshot: Snapshot, columns, opts: ExtractOptions,
                      checked: bool = True):
        """(rows, explain), as for CSV (`checked`: a value not of its column's type)."""

        raw = spark.read.option("mergeSchema", "true").parquet(*snapshot.files)
        mapping = _match_columns(raw.columns, columns, snapshot.name, "schema")
        selected = {name: raw[f"`{mapping[name]}`"] for name, _ in columns}
        typed = {}
        for name, data_type in columns:
            source_type = dict(raw.dtypes)[mapping[name]]
            target = spark_type_for(data_type)
            typed[name] = selected[name] if source_type == target else \
                selected[name].try_cast(target)
        rows = [typed[name].alias(name) for name, _ in columns]
        if not checked:
            return raw.select(*rows), None
        # the raw values as text: a struct's minimum needs orderable fields
        bad = _bad_row(typed, {name: value.cast("string") for name, value in selected.items()},
                       F.col("_metadata.file_path").alias("_file"),
                       F.col("_metadata.row_index").alias("_row"))

        def explain(bad: Any) -> SourceError:
            name = bad["_bad"]
            problem = cell_type_problem(name, raw.columns.index(mapping[name]) + 1,
                                        expected_type(dict(columns)[name], opts), str(bad[name]))
            return SourceError(f"row {bad['_row'] + 1}: {problem}",
                               file=_plain_name(bad["_file"], list(snapshot.files)),
                               hint=_VALUE_HINT)
        return raw.select(*rows, bad.alias(BAD_COLUMN)), explain


def _csv_value_error(bad: Any, types: dict[str, str], field: int, file: str,
                     opts: ExtractOptions) -> SourceError:
    """The error of a CSV value that is not of its column's type: the file and the line its
    record starts on (found by reading the file again, on this error path only), the column
    by name and position, the value and the type it must read as."""
    name = bad["_bad"]
    value = bad[name]
    line = _line(file, lambda data: csv_value_line(data, file, opts, field, value))
    return SourceError(cell_type_problem(name, field + 1, expected_type(types[name], opts),
                                         value), file=file, line=line, hint=_VALUE_HINT)


def _line(file: str, find: Callable[[bytes], int | None]) -> int | None:
    """`find` on the file's bytes (read again: for an error path only); None when unreadable."""
    try:
        return find(read_feed_bytes(file))
    except (OSError, SourceError):
        return None

def _plain_name(uri: str, files: Sequence[str]) -> str:
    from urllib.parse import unquote

    plain = unquote(uri[5:] if uri.startswith("file:") else uri)
    plain = "/" + plain.lstrip("/") if uri.startswith("file:") else plain
    for file in files:
        if os.path.abspath(file) == plain or file == uri:
            return file
    return plain

# --- the change set -----------------------------------------------------------------------------

def read_snapshots(reader: Any, spark: Any, table: Any, files: Sequence[str],
                   state: dict[str, Any]) -> ReadResult:
    """Diff each new snapshot against its predecessor; remember the last one in the state."""

    kind = reader.type_name
    opts = parse_options(table.source.options, kind)
    columns = _columns(table)
    keys = _keys(table, opts, kind)
    names = [name for name, _ in columns]
    missing = [k for k in keys if k not in names]
    if missing:
        raise SourceError(f"table {table.unique_id}: key column(s) {', '.join(missing)} are "
                          f"not columns")
    snapshots = group_snapshots(files, feed_root(table.source.path or ""), opts.snapshot_order)
    previous, origin = _previous(spark, reader, table, state, columns, opts)
    skipped = []
    if origin == FROM_NOTHING and len(snapshots) > 1:
        # Nothing precedes this batch (a first load, a full refresh): the newest snapshot is the
        # whole table, and the older ones would only land changes it overwrites in the same
        # file. They are consumed unread (an old snapshot may lack a column added since).
        skipped, snapshots = [s.name for s in snapshots[:-1]], snapshots[-1:]
    frames = []
    for index, snapshot in enumerate(snapshots):
        current, explain = reader.read_snapshot(spark, snapshot, columns, opts)
        _check_keys(current, keys, snapshot, opts, names if kind == "csv" else None, explain)
        current = current.drop(BAD_COLUMN)
        frames.append(diff_snapshots(previous, current, names, keys)
                      .withColumn("_order", F.struct(F.lit(index).alias("snapshot"),
                                                     F.lit(snapshot.name).alias("name")))
                      .withColumn("_source_file", F.lit(snapshot.name))
                      .withColumn("_source_line", F.lit(0).cast("bigint")))
        previous = current
    if frames:
        changes = frames[0]
        for frame in frames[1:]:
            changes = changes.unionByName(frame)
        new_state = {STATE_SNAPSHOT: list(snapshots[-1].files)}
    else:
        changes = _empty_changes(spark, columns)
        new_state = dict((state or {}).get("reader") or {})
    info = {"state": new_state, "previous_snapshot": origin,
            "snapshots": [s.name for s in snapshots], "skipped_snapshots": skipped}
    if not table.key_columns:
        info["key_columns"] = keys
    return ReadResult(changes=changes.select(*names, "_op", "_order", "_present", "_source_file",
                                             "_source_line"),
                      files=tuple(files), info=info)


def _previous(spark: Any, reader: Any, table: Any, state: dict[str, Any], columns, opts):
    """(previous snapshot rows, where they came from)."""
    remembered = previous_snapshot(state)
    if remembered and all(_exists(f) for f in remembered):
        snapshot = Snapshot(remembered[0] if len(remembered) == 1
                            else os.path.dirname(remembered[0]), remembered)
        try:
            # checked when it was published; a column it lacks still fails (→ the mirrored table)
            return (reader.read_snapshot(spark, snapshot, columns, opts, checked=False)[0],
                    f"extract {snapshot.name}")
        except SourceError:
            pass  # e.g. the YAML gained a column the old extract lacks: the mirrored table knows

    mirrored = read_mirrored(spark, table.delta_path)
    if mirrored is not None:


        present = set(mirrored.columns)
        rows = mirrored.select(*[(F.col(f"`{name}`") if name in present else F.lit(None))
                                 .cast(spark_type_for(data_type)).alias(name)
                                 for name, data_type in columns])
        return rows, f"mirrored table {table.delta_path}"
    return _empty_rows(spark, columns), FROM_NOTHING


def _check_keys(current, keys: Sequence[str], snapshot: Snapshot, opts: ExtractOptions,
                csv_columns: Sequence[str] | None = None, explain: Any = None) -> None:
    """Reject a snapshot with a bad row (`explain`: `current` carries BAD_COLUMN, and
    `explain(bad)` is the error of its first bad row), a NULL key, a duplicated key, or no rows
    (unless allowed). A CSV snapshot (`csv_columns`: the table's columns) names the file and
    line where it can."""

    null_key = F.lit(False)
    for key in keys:
        null_key = null_key | F.col(f"`{key}`").isNull()
    # one job: the first bad row, rows, NULL-keyed rows and the most rows of one key, by key
    checks = [F.min(BAD_COLUMN).alias("bad")] if explain is not None else []
    per_key = current.groupBy(*keys).agg(F.count(F.lit(1)).alias("count"), *checks)
    counts = per_key.agg(F.sum("count").alias("rows"),
                         F.sum(F.when(null_key, F.col("count"))).alias("null_keys"),
                         F.max(F.when(~null_key, F.col("count"))).alias("most"),
                         *[F.min("bad").alias("bad") for _ in checks]).first()
    if explain is not None and counts["bad"] is not None:
        raise explain(counts["bad"])
    if counts["null_keys"]:
        file, line = _key_place(snapshot, opts, keys, csv_columns, null=True)
        raise SourceError(f"{counts['null_keys']} row(s) have a NULL key ({', '.join(keys)})"
                          + (", the first here" if line else ""), file=file, line=line,
                          hint="every row of an extract needs a key value")
    if not counts["rows"]:
        if opts.allow_empty:
            return
        raise SourceError("the extract has no rows: publishing it would delete every row",
                          file=snapshot.name,
                          hint="set allow_empty: true in source.options if that is intended")
    if (counts["most"] or 0) <= 1:
        return
    dup = per_key.where(F.col("count") > 1).limit(1).collect()
    if dup:
        shown = ", ".join(f"{k}={dup[0][k]!r}" for k in keys)
        file, line, first = _key_place(snapshot, opts, keys, csv_columns, null=False)
        raise SourceError(f"key {shown} appears {dup[0]['count']} times in the snapshot"
                          + (f" (first on line {first}, again here)" if line else ""),
                          file=file, line=line, hint="an extract must hold one row per key")


def _key_place(snapshot: Snapshot, opts: ExtractOptions, keys: Sequence[str],
               csv_columns: Sequence[str] | None, null: bool):
    """(file, line) of the first NULL key (`null`), else (file, line, first line) of the first
    repeated key, in a CSV snapshot's files by their text; the snapshot and no line where that
    finds none (a Parquet snapshot, a repeat across files, equal values written apart)."""
    if csv_columns is not None:
        for file in snapshot.files:
            try:
                null_line, repeat = csv_key_lines(read_feed_bytes(file), file, opts, keys,
                                                  csv_columns)
            except (OSError, SourceError):
                continue
            if null and null_line:
                return file, null_line
            if not null and repeat:
                return file, repeat[1], repeat[0]
    return (snapshot.name, None) if null else (snapshot.name, None, None)


def diff_snapshots(previous, current, names: Sequence[str], keys: Sequence[str]):
    """Changes turning `previous` into `current`: 0 new keys, 1 changed rows, 2 missing keys.

    Returns the table's columns plus `_op` and `_present` (null: full rows)."""

    values = [n for n in names if n not in keys]
    old = previous.select(*[F.col(f"`{n}`").alias(f"o_{i}") for i, n in enumerate(names)],
                          F.lit(True).alias("_in_old"))
    new = current.select(*[F.col(f"`{n}`").alias(f"n_{i}") for i, n in enumerate(names)],
                         F.lit(True).alias("_in_new"))
    index = {n: i for i, n in enumerate(names)}
    on = [old[f"o_{index[k]}"] == new[f"n_{index[k]}"] for k in keys]
    joined = old.join(new, on, "full_outer")
    changed = F.lit(False)
    for name in values:
        i = index[name]
        changed = changed | ~F.col(f"o_{i}").eqNullSafe(F.col(f"n_{i}"))
    op = (F.when(F.col("_in_old").isNull(), F.lit(OP_INSERT))
          .when(F.col("_in_new").isNull(), F.lit(OP_DELETE))
          .when(changed, F.lit(OP_UPDATE)))
    picked = [F.when(F.col("_in_new").isNull(), F.col(f"o_{i}")).otherwise(F.col(f"n_{i}"))
              .alias(n) for n, i in index.items()]
    return (joined.select(*picked, op.alias("_op"))
            .where(F.col("_op").isNotNull())
            .withColumn("_op", F.col("_op").cast("int"))
            .withColumn("_present", F.lit(None).cast("array<string>")))


def _empty_rows(spark: Any, columns):


    return spark.createDataFrame([], StructType([
        StructField(name, _parse_datatype_string(spark_type_for(t))) for name, t in columns]))


def _empty_changes(spark: Any, columns):

    return (_empty_rows(spark, columns)
            .withColumn("_op", F.lit(0))
            .withColumn("_order", F.struct(F.lit(0).alias("snapshot"), F.lit("").alias("name")))
            .withColumn("_present", F.lit(None).cast("array<string>"))
            .withColumn("_source_file", F.lit(""))
            .withColumn("_source_line", F.lit(0).cast("bigint")))
