"""What the Spark feed readers share: Python parsers run in Spark workers, the change schema.

A reader (one module per format here) turns feed files into canonical changes (see
`mirrorspec.sources.base` for the columns) by running the format's pure parser from
`mirrorspec.sources` in Python workers, with Arrow carrying the rows to the JVM.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (ArrayType, IntegerType, LongType, StringType, StructField,
                               StructType, _parse_datatype_string)

from mirrorspec.base.errors import SourceError
from mirrorspec.openmirroring.mirroring import spark_type_for
from mirrorspec.sources.base import (OP_COLUMN, PRESENT_COLUMN, SOURCE_FILE_COLUMN,
                                     SOURCE_LINE_COLUMN)
from mirrorspec.sources.debezium import Row, TableShape
from mirrorspec.base import files as fsmod

# --- parse tasks in Python workers (Qlik, Arcion) -----------------------------------------------

def map_tasks(spark, tasks: Sequence[dict], parse: Callable[[dict], dict[str, Any]], schema):
    """A DataFrame made by running `parse(task)` for every task in a Python worker.

    `parse` returns the columns of `schema` as lists or Arrow arrays (same length). The tasks
    travel as local data, which Spark slices into one partition per core; each Python worker runs its slice's
    tasks one after another, and Arrow carries the result to the JVM. Every Python task costs a
    worker round trip (~0.3 CPU s measured), so a few full slices beat many small ones.
    """
    arrow_schema = to_arrow_schema(schema)

    def run(batches: Iterable):
        import pyarrow as pa

        for batch in batches:
            for text, data in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                task = json.loads(text)
                if data is not None:
                    task["data"] = data
                columns = parse(task)
                arrays = [_to_arrow(columns[f.name], f.type, pa) for f in arrow_schema]
                yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    return _task_frame(spark, tasks).mapInArrow(run, schema)


def _task_frame(spark, tasks: Sequence[dict]):
    """The tasks as rows of JSON (`task`); with the bytes each covers (`data`) for feed files
    given as URIs, which Python workers can't open: Spark reads them (binaryFile, so any Hadoop
    filesystem with the session's credentials) and cuts each task's byte range."""
    def is_remote(task: dict) -> bool:
        return isinstance(task.get("file"), str) and fsmod.is_remote(task["file"])

    import pyarrow as pa

    local = [json.dumps(t) for t in tasks if not is_remote(t)]
    # From an Arrow table the rows go to the JVM as they are; from a list of tuples PySpark
    # checks each row in a Python task, which starts a second worker daemon (and its workers)
    # for every publish beside the one that parses.
    frame = spark.createDataFrame(pa.table({"task": pa.array(local, pa.string()),
                                            "data": pa.nulls(len(local), pa.binary())}))
    remote = [t for t in tasks if is_remote(t)]
    if not remote:
        return frame
    whole = [t.get("compressed") or "start" not in t for t in remote]
    wanted = spark.createDataFrame(pa.table({
        "task": pa.array([json.dumps(t) for t in remote], pa.string()),
        "file": pa.array([t["file"] for t in remote], pa.string()),
        "start": pa.array([None if w else t["start"] + 1 for t, w in zip(remote, whole)],
                          pa.int64()),
        "length": pa.array([None if w else t["end"] - t["start"] for t, w in zip(remote, whole)],
                           pa.int64())}))
    content = (spark.read.format("binaryFile").load(sorted({t["file"] for t in remote}))
               .select(F.col("path").alias("file"), "content"))
    data = F.when(F.col("start").isNull(), F.col("content")).otherwise(
        F.col("content").substr(F.col("start"), F.col("length")))
    # a left join: a task whose file Spark did not return keeps data NULL and fails by name
    shipped = wanted.join(content, "file", "left").select("task", data.alias("data"))
    return frame.unionByName(shipped)


def change_schema(columns: Sequence[tuple[str, str]], order_fields: Sequence[tuple[str, str]],
                  extra: Sequence[tuple[str, str]] = ()):
    """The StructType of a reader's canonical changes: table columns (DataTypes), then `_op`,
    `_order` (a struct of `order_fields`), `_present`, `_source_file`, `_source_line`, `extra`."""
    simple = {"double": T.DoubleType(), "float": T.FloatType(), "smallint": T.ShortType(),
              "int": T.IntegerType(), "bigint": T.LongType(), "timestamp": T.TimestampType(),
              "date": T.DateType(), "string": T.StringType(), "boolean": T.BooleanType(),
              "binary": T.BinaryType()}

    def parse(name: str):
        return simple[name] if name in simple else _parse_datatype_string(name)

    fields = [T.StructField(name, parse(spark_type_for(dt)), True) for name, dt in columns]
    fields += [
        T.StructField(OP_COLUMN, T.IntegerType(), True),
        T.StructField("_order", T.StructType([T.StructField(n, parse(t)) for n, t in order_fields])),
        T.StructField(PRESENT_COLUMN, T.ArrayType(T.StringType())),
        T.StructField(SOURCE_FILE_COLUMN, T.StringType()),
        T.StructField(SOURCE_LINE_COLUMN, T.LongType()),
    ]
    fields += [T.StructField(n, parse(t), True) for n, t in extra]
    return T.StructType(fields)


def _to_arrow(values: Any, arrow_type, pa):
    if isinstance(values, pa.Array):
        if values.type.equals(arrow_type):
            return values
        if pa.types.is_nested(arrow_type) and pa.types.is_nested(values.type):
            return values.cast(arrow_type)  # field names and nullability only
        values = values.to_pylist()  # the lists' own conversion, so both give equal values
    if pa.types.is_struct(arrow_type):
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        children = [_to_arrow([None if v is None else v[i] for v in values], f.type, pa)
                    for i, f in enumerate(fields)]
        missing = [v is None for v in values]  # e.g. an error row's `_delivery`
        return pa.StructArray.from_arrays(children, fields=fields,
                                          mask=pa.array(missing) if any(missing) else None)
    return pa.array(values, type=arrow_type)


# --- publishing ------------------------------------------------------------------------------------


# --- text files → a Python parser → canonical DataFrame (Debezium, AWS DMS CSV) ---------------

_ERROR_COLUMN = "_parse_error"
# A row with this `_op` counts messages a parser skipped: `_present` holds the kind, and
# `_source_line` the count, so the counts come back from the workers with the error check.
_SKIPPED_OP = -2


# A row with this `_op` carries a note a parser left for its Spark reader (where a bootstrap
# starts, which positions a file holds…): `_present` holds [kind, *details]. Notes come back
# in ReadResult.info["notes"] and never reach the landing zone.
_NOTE_OP = -3


def skipped_rows(counts: dict[str, int], width: int, order_width: int, file: str,
                 extra: int = 0) -> list[Row]:
    """The rows that carry `counts` (kind → messages skipped in `file`) out of a parse task
    (`extra`: how many extra columns the parser's rows end with)."""
    return [(*([None] * width), _SKIPPED_OP, (None,) * order_width, [kind], file, count,
             *([None] * extra))
            for kind, count in sorted(counts.items())]


def note_rows(notes: Sequence[tuple], width: int, file: str, extra: int = 0) -> list[Row]:
    """The rows that carry a parser's notes out of a parse task: each note is
    (kind, details (texts), order tuple, line); `extra` as for `skipped_rows`."""
    return [(*([None] * width), _NOTE_OP, order, [kind, *details], file, line, *([None] * extra))
            for kind, details, order, line in notes]


def text_change_schema(shape: TableShape, order_fields: Sequence[tuple[str, str]],
                       extra: Sequence[tuple[str, str]] = ()):
    """The Spark schema of canonical changes for `shape`, then the `extra` columns (name, DDL
    type) the parser's rows end with, plus the internal error column."""


    fields = [StructField(name, _parse_datatype_string(spark_type_for(data_type)), True)
              for name, data_type in shape.columns]
    order = StructType([StructField(name, _parse_datatype_string(kind), True)
                        for name, kind in order_fields])
    fields += [
        StructField("_op", IntegerType(), False),
        StructField("_order", order, False),
        StructField("_present", ArrayType(StringType()), True),
        StructField("_source_file", StringType(), False),
        StructField("_source_line", LongType(), False),
    ]
    fields += [StructField(name, _parse_datatype_string(kind), True) for name, kind in extra]
    fields.append(StructField(_ERROR_COLUMN, StringType(), True))
    return StructType(fields)


def _local_name(uri: str, wanted: dict[str, str]) -> str:
    """The caller's spelling of a file Spark reports as a URI."""

    if uri in wanted:
        return wanted[uri]
    plain = unquote(uri[5:] if uri.startswith("file:") else uri)
    if plain.startswith("//"):
        plain = plain[2:]
    for key in (plain, os.path.normpath(plain)):
        if key in wanted:
            return wanted[key]
    return plain


def read_text_changes(spark: Any, files: Sequence[str], shape: TableShape,
                      parse: Callable[[str, str], Iterable[Row]],
                      order_fields: Sequence[tuple[str, str]], batch_rows: int = 8192,
                      binary: bool = False, extra: Sequence[tuple[str, str]] = ()):
    """Run `parse(text, file)` on every file (one Spark task per file, whole text; with `binary`
    the file's bytes instead of its text; rows end with the `extra` columns) and return the
    canonical DataFrame and the ReadResult.info that tells the publisher it is persisted (to
    unpersist after publishing). A SourceError in any file is re-raised here (the first by file
    order), so nothing of a bad batch reaches the landing zone."""

    schema = text_change_schema(shape, order_fields, extra)
    if not files:
        return spark.createDataFrame([], schema).drop(_ERROR_COLUMN), {}
    wanted: dict[str, str] = {}
    for file in files:
        wanted[file] = file
        if "://" not in file:
            wanted[os.path.normpath(os.path.abspath(file))] = file
    names = list(schema.names)
    column_count = len(shape.columns)

    def run(batches):
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow_schema = to_arrow_schema(schema)
        buffer: list[list] = [[] for _ in names]

        def flush():
            batch = pa.RecordBatch.from_arrays(
                [pa.array(col, type=arrow_schema.field(i).type) for i, col in enumerate(buffer)],
                schema=arrow_schema)
            for col in buffer:
                col.clear()
            return batch

        for batch in batches:
            paths = batch.column(0).to_pylist()
            texts = batch.column(1).to_pylist()
            for uri, text in zip(paths, texts):
                file = _local_name(uri, wanted)
                try:
                    for row in parse(text if text is not None else (b"" if binary else ""),
                                     file):
                        for i, value in enumerate(row):
                            buffer[i].append(value)
                        buffer[-1].append(None)
                        if len(buffer[0]) >= batch_rows:
                            yield flush()
                except SourceError as exc:
                    for col in buffer:
                        col.clear()
                    error = [None] * column_count + [
                        -1, {name: None for name, _ in order_fields}, None, file,
                        exc.line or 0, *([None] * len(extra)),
                        json.dumps({"message": exc.message, "hint": exc.hint})]
                    for i, value in enumerate(error):
                        buffer[i].append(value)
                    yield flush()
                    return
        if buffer[0]:
            yield flush()

    if binary:
        raw = (spark.read.format("binaryFile").load(list(files))
               .select(F.col("path"), F.col("content").alias("value")))
    else:
        raw = (spark.read.text(list(files), wholetext=True)
               .select(F.col("_metadata.file_path").alias("path"), "value"))
    parsed = raw.mapInArrow(run, schema)

    parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
    # one pass finds the first error and the skip counts (a few rows per file at most)
    special = (parsed.where(F.col("_op") < 0)
               .select("_op", "_order", "_present", "_source_file", "_source_line",
                       _ERROR_COLUMN)
               .collect())
    errors = sorted((r for r in special if r[_ERROR_COLUMN] is not None),
                    key=lambda r: (r["_source_file"], r["_source_line"]))
    if errors:
        parsed.unpersist()
        first = errors[0]
        detail = json.loads(first[_ERROR_COLUMN])
        raise SourceError(detail["message"], file=first["_source_file"],
                          line=first["_source_line"] or None, hint=detail.get("hint"))
    info: dict[str, Any] = {"cached": [parsed], "persisted": True}
    skipped: dict[str, int] = {}
    notes: list[dict[str, Any]] = []
    for r in special:
        if r["_op"] == _SKIPPED_OP:
            kind = r["_present"][0]
            skipped[kind] = skipped.get(kind, 0) + int(r["_source_line"])
        elif r["_op"] == _NOTE_OP:
            notes.append({"kind": r["_present"][0], "details": list(r["_present"][1:]),
                          "file": r["_source_file"], "line": int(r["_source_line"]),
                          "order": tuple(r["_order"])})
    if skipped:
        info["skipped"] = skipped
    if notes:
        info["notes"] = sorted(notes, key=lambda n: (n["file"], n["line"]))
    if special:
        return parsed.where(F.col("_op") >= 0).drop(_ERROR_COLUMN), info
    return parsed.drop(_ERROR_COLUMN), info
