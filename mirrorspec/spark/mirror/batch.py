"""Reading a table's pending landing files into ONE DataFrame of tagged change rows.

The result holds the table's columns (the union over the files, typed), `__marker` (0/1/2/4, or
-1 for an invalid cell), `__problem` (why a row is bad, else NULL), `__file_order` (position of
the file in the batch) and `__row_order` (position of the row in its file). Files with the same
columns are read in one Spark read; the file of each row comes from `_metadata.file_name`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from mirrorspec.landing import checks
from mirrorspec.openmirroring import mirroring
from mirrorspec.openmirroring.parquet_types import engine_arrow_type
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base import files as fsmod
from mirrorspec.landing.layout import LandingFile

MARKER = "__marker"
PROBLEM = "__problem"
FILE_ORDER = "__file_order"
ROW_ORDER = "__row_order"
_CORRUPT = "__corrupt_record"
_VALUE_PROBLEM = "__value_problem"
_GLOB_CHARS = re.compile(r"([\\\[\]{}*?])")
EMPTY_CELL = "\u0001mirrorspec:empty\u0001"
INVALID_MARKER = -1


@dataclass
class FileSchema:
    """The columns of one landing file (the row marker apart)."""

    file: LandingFile
    fields: list[T.StructField]          # table columns in file order, typed
    marker: str | None                   # the marker column's name as spelled in the file
    marker_last: bool                    # False when the marker isn't the final column
    header: tuple[str, ...] = ()         # delimited files: the header, marker included
    typed: dict[str, str] | None = None  # delimited files: column → DataType it is cast to
    marker_type: T.DataType | None = None  # Parquet files: the marker column's own type
    # Parquet columns Spark can't read as they are (TIMESTAMP(NANOS), TIME): read as integers
    # in `unit` ("ns", "us", "ms", "s") and turned into microsecond timestamps (a TIME of day
    # lands on 1970-01-01, as an ITime cell does).
    as_micros: tuple[tuple[str, str], ...] = ()
    # A copy Spark reads instead of the file (a decompressed `.snappy` file: spark/mirror/decompressed.py)
    read_path: str | None = None

    @property
    def spark_path(self) -> str:
        """The path Spark reads the file's rows from."""
        return self.read_path or self.file.path


def col(name: str) -> Column:
    """A column by its exact name (dots and spaces in user column names are not paths)."""
    return F.col("`" + name.replace("`", "``") + "`")


_is_marker = checks.is_marker


# --- per-file schemas ---------------------------------------------------------------------

def _arrow_fields(spark: SparkSession, file: LandingFile):
    """Spark fields of a local Parquet file from its footer (no Spark job) and its columns to
    read as integers (`FileSchema.as_micros`), or None for a remote file. A field PySpark can't
    map takes the type Spark infers for it."""
    if fsmod.is_remote(file.path):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(fsmod.local_path(file.path))
        out_of_range = checks.time_range_problem(fsmod.local_path(file.path))
    except Exception as exc:
        raise LandingZoneError(f"not a readable Parquet file: {exc}", file=file.path,
                               code="BadFile", hint="re-write the file under the same name") from exc
    if out_of_range is not None:
        row, _, problem = out_of_range
        raise LandingZoneError(problem, file=file.path, row=row, code="BadFile")
    as_micros = tuple((f.name, f.type.unit) for f in schema
                      if (pa.types.is_timestamp(f.type) and f.type.unit == "ns")
                      or pa.types.is_time(f.type))
    types = [_spark_type_of_arrow(f.type) for f in schema]
    if None in types:  # a type PySpark can't map: Spark's own type for it
        inferred = {f.name: f.dataType for f in _spark_fields(spark, file)}
        types = [t if t is not None else inferred[f.name] for t, f in zip(types, schema)]
    return [T.StructField(f.name, t, True) for f, t in zip(schema, types)], as_micros


# The Parquet physical type of a TIMESTAMP(NANOS) or TIME column of each unit, and how its
# integers become microseconds.
_INTEGER_OF_UNIT = {"ns": T.LongType(), "us": T.LongType(), "ms": T.IntegerType(),
                    "s": T.IntegerType()}
_MICROS_OF_UNIT = {
    "ns": lambda v: F.floor(v / F.lit(1000)).cast("long"),
    "us": lambda v: v,
    "ms": lambda v: v * F.lit(1000),
    "s": lambda v: v * F.lit(1_000_000),
}


def _spark_type_of_arrow(arrow_type) -> T.DataType | None:
    from pyspark.sql.pandas.types import from_arrow_type

    try:
        return from_arrow_type(engine_arrow_type(arrow_type), prefer_timestamp_ntz=True)
    except Exception:  # noqa: BLE001 - a type PySpark can't map: Spark infers it
        return None


def _spark_fields(spark: SparkSession, file: LandingFile) -> list[T.StructField]:
    try:
        return list(spark.read.parquet(_literal_path(file.path)).schema.fields)
    except Exception as exc:
        raise LandingZoneError(f"not a readable Parquet file: {_short(exc)}", file=file.path,
                               code="BadFile", hint="re-write the file under the same name") from exc


def file_schema(spark: SparkSession, filesystem, file: LandingFile,
                metadata: mirroring.TableMetadata) -> FileSchema:
    """Columns and types of one landing file, without reading its rows."""
    if file.format == "parquet":
        found = _arrow_fields(spark, file)
        fields, as_micros = found if found is not None else (_spark_fields(spark, file), ())
        names = [f.name for f in fields]
        markers = [i for i, n in enumerate(names) if _is_marker(n)]
        marker = names[markers[0]] if markers else None
        table_fields = [f for f in fields if not _is_marker(f.name)]
        return FileSchema(file, table_fields, marker, not markers or markers[0] == len(names) - 1,
                          marker_type=fields[markers[0]].dataType if markers else None,
                          as_micros=as_micros)
    header = checks.read_header(filesystem, file, metadata.delimited)
    checks.check_encoding(filesystem, file, metadata.delimited)
    declared = {c.name.lower(): c for c in metadata.columns}
    fields, typed = [], {}
    marker = None
    for name in header:
        if _is_marker(name):
            marker = name
            continue
        column = declared.get(name.lower())
        if column is not None:
            spark_type = T._parse_datatype_string(mirroring.spark_type_for(column.data_type))
            typed[name] = column.data_type
        else:
            spark_type = T.StringType()
        fields.append(T.StructField(name, spark_type, True))
    marker_last = marker is None or _is_marker(header[-1])
    return FileSchema(file, fields, marker, marker_last, tuple(header), typed)


def check_schema(schema: FileSchema, union: list[T.StructField], key_columns: tuple[str, ...],
                 strict: bool) -> str | None:
    """Why this file can't be applied after the columns in `union`, or None. Extends `union`
    with the file's new columns (first-seen order); the rule is `landing.checks.extend_columns`."""
    return checks.extend_columns(
        schema.fields, union, key_columns, strict, schema.marker_last,
        type_of=lambda f: f.dataType, is_null=lambda t: isinstance(t, T.NullType),
        show=lambda t: t.simpleString(), retyped=lambda f, t: T.StructField(f.name, t, True),
        marker_non_integer=marker_non_integer(schema))


def marker_non_integer(schema: FileSchema) -> str | None:
    """The type of a Parquet file's marker column when it isn't an integer one ('string'),
    else None (delimited files: every cell is text)."""
    kind = schema.marker_type
    if schema.marker is None or kind is None or isinstance(kind, T.IntegralType):
        return None
    return kind.simpleString()


# --- proving local Parquet files clean without a Spark job ---------------------------------

def clean_parquet_stats(schemas: list[FileSchema],
                        metadata: mirroring.TableMetadata) -> dict[int, dict] | None:
    """Per-file `{"rows", "keyed"}` when every file is a local Parquet file whose marker and key
    columns (read with pyarrow) prove each row valid: a marker of 0/1/2/4 or null, no NULL key
    in a 1/2/4 row, no 1/2/4 row in a keyless table. None when any file needs the Spark check
    (delimited or remote files, a marker column that isn't an integer, or any row the proof
    can't clear): that job then finds and names the bad row, so this is only ever a shortcut."""
    import pyarrow.parquet as pq

    default_keyed = metadata.default_marker in mirroring.KEYED_MARKERS
    stats: dict[int, dict] = {}
    for order, schema in enumerate(schemas):
        if schema.file.format != "parquet" or fsmod.is_remote(schema.file.path):
            return None
        if schema.marker is not None and not isinstance(schema.marker_type, T.IntegralType):
            return None
        path = fsmod.local_path(schema.file.path)
        if schema.marker is None and not default_keyed:
            stats[order] = {"rows": pq.ParquetFile(path).metadata.num_rows, "keyed": 0}
            continue
        names = {f.name.lower(): f.name for f in schema.fields}
        keys = [names[k.lower()] for k in metadata.key_columns]
        try:
            data = pq.read_table(path, columns=([schema.marker] if schema.marker else []) + keys)
        except Exception:  # noqa: BLE001 - the Spark check reports unreadable files
            return None
        marker = data.column(schema.marker).combine_chunks() if schema.marker else None
        rows, keyed, bad = checks.first_bad_row(
            data.num_rows, marker, [data.column(k).combine_chunks() for k in keys], metadata)
        if bad is not None:
            return None
        stats[order] = {"rows": rows, "keyed": keyed}
    return stats


# --- reading rows -----------------------------------------------------------------------------

def _encoded_name(spark: SparkSession, path: str) -> str:
    """The file name as Spark's `_metadata.file_name` spells it (URL-encoded)."""
    from mirrorspec.spark.platform.session import is_connect
    if is_connect(spark):  # no JVM here: quote as java.net.URI does for a path segment
        from urllib.parse import quote
        return quote(path.rstrip("/").rsplit("/", 1)[-1], safe="!$&'()*+,;=:@-._~")
    # Private API: only Hadoop's Path knows the exact encoding Spark reports; PySpark exposes
    # no public call for it (a failure here is a real error, not hidden).
    uri = spark._jvm.org.apache.hadoop.fs.Path(path).toUri().toString()
    return uri.rstrip("/").rsplit("/", 1)[-1]


def _order_column(spark: SparkSession, ordered: list[tuple[int, FileSchema]]) -> Column:
    """The position of each row's file in the batch, from `_metadata.file_name`."""
    offsets = {s.file.sequence - order if s.file.sequence is not None else None
               for order, s in ordered}
    if len(offsets) == 1 and None not in offsets:
        # Consecutive 20-digit names (sequence mode): arithmetic, not a lookup per row.
        name = F.col("_metadata.file_name")
        return (F.substring(name, 1, 20).cast("long") - F.lit(offsets.pop())).cast("int")
    pairs = []
    for order, schema in ordered:
        pairs += [F.lit(_encoded_name(spark, schema.spark_path)), F.lit(order)]
    return F.create_map(*pairs)[F.col("_metadata.file_name")].cast("int")


def _marker_expr(column: str | None, default: int, data_type: T.DataType | None = None) -> Column:
    if column is None:
        return F.lit(default)
    valid = sorted(mirroring.VALID_MARKERS)
    if isinstance(data_type, T.IntegralType):  # the usual int32 column: no string round trip
        value = col(column)
        return (F.when(value.isNull(), F.lit(default))
                .when(value.isin(valid), value.cast("int"))
                .otherwise(F.lit(INVALID_MARKER)))
    raw = F.trim(col(column).cast("string"))
    number = raw.try_cast("double")
    return (F.when(raw.isNull() | (raw == ""), F.lit(default))
            .when(number.isin(valid), number.cast("int"))
            .otherwise(F.lit(INVALID_MARKER)))


def _read_parquet_group(spark, group: list[tuple[int, FileSchema]], union: list[T.StructField],
                        default: int) -> DataFrame:
    """One Spark read of Parquet files with the same columns, typed and tagged in ONE projection
    (each DataFrame step is analysed by the driver, which a fresh process pays for)."""
    first = group[0][1]
    # Spark can't read TIMESTAMP(NANOS) or TIME as timestamps: read the integers, then convert.
    units = dict(first.as_micros)
    fields = [T.StructField(f.name, _INTEGER_OF_UNIT[units[f.name]], True) if f.name in units
              else f for f in first.fields]
    if first.marker is not None:
        fields.append(T.StructField(first.marker, first.marker_type, True))
    df = (spark.read.schema(T.StructType(fields))
          .parquet(*[_literal_path(s.spark_path) for _, s in group]))
    present = {f.name.lower(): f for f in first.fields}
    columns = []
    for field in union:
        source = present.get(field.name.lower())
        if source is None:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
            continue
        value = col(source.name)
        if source.name in units:
            micros = _MICROS_OF_UNIT[units[source.name]](value.cast("long"))
            value = F.timestamp_micros(micros).cast(source.dataType)
        columns.append(value.cast(field.dataType).alias(field.name))
    marker = first.marker
    return df.select(
        *columns,
        _marker_expr(marker, default, first.marker_type).alias(MARKER),
        (col(marker).cast("string") if marker else F.lit(None).cast("string")).alias("__marker_raw"),
        F.lit(None).cast("string").alias("__read_problem"),
        F.lit(None).cast("string").alias(_VALUE_PROBLEM),
        _order_column(spark, group).alias(FILE_ORDER),
        F.col("_metadata.row_index").cast("long").alias(ROW_ORDER))


def _read_csv_group(spark, group: list[tuple[int, FileSchema]],
                    metadata: mirroring.TableMetadata) -> tuple[DataFrame, str | None]:
    options = metadata.delimited
    first = group[0][1]
    fields = [T.StructField(n, T.StringType(), True) for n in first.header]
    fields.append(T.StructField(_CORRUPT, T.StringType(), True))
    reader = (spark.read.schema(T.StructType(fields))
              .option("header", True)
              .option("multiLine", True)  # one partition per file keeps row order; quoted newlines
              .option("sep", options.column_separator)
              .option("quote", options.quote_character or "\u0000")
              .option("escape", options.escape_character or "\u0000")
              # Spark turns an empty unquoted cell into its nullValue, and a quoted "" into
              # emptyValue: a sentinel keeps the two apart; NullValue is applied below.
              .option("nullValue", EMPTY_CELL)
              .option("emptyValue", "")
              .option("encoding", options.encoding)
              .option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", _CORRUPT)
              .option("enforceSchema", True)
              .option("ignoreLeadingWhiteSpace", False)
              .option("ignoreTrailingWhiteSpace", False))
    if options.escape_character == options.quote_character and options.quote_character:
        reader = reader.option("escape", options.quote_character)
    df = reader.csv([_literal_path(s.spark_path) for _, s in group])
    df = df.withColumn(FILE_ORDER, _order_column(spark, group))
    df = df.withColumn(ROW_ORDER, F.monotonically_increasing_id())
    df = df.select(*[_cell(col(n), options.null_value).alias(n) for n in first.header],
                   _CORRUPT, FILE_ORDER, ROW_ORDER)
    # The data column in this test keeps Spark from seeing a query of the corrupt-record column
    # alone (which it refuses) once the optimizer has folded every other check away.
    touch = F.coalesce(F.length(col(first.header[0])), F.lit(0)) >= 0
    problems = [F.when(F.col(_CORRUPT).isNotNull() & touch,
                       F.lit(checks.MALFORMED_TEXT))]
    # A delete row needs only its key: a non-key cell that isn't of its type (the seed's own
    # example writes NULL there) is no problem in it, so it is kept apart from the rest.
    value_problems = []
    keys = {k.lower() for k in metadata.key_columns}
    required = {c.name.lower() for c in metadata.columns if not c.nullable}
    for column, data_type in (first.typed or {}).items():
        target = T._parse_datatype_string(mirroring.spark_type_for(data_type))
        text = _text_value(col(column), data_type)
        cast = text.try_cast(target)
        before, after = checks.value_type_parts(column, first.header.index(column) + 1,
                                                data_type)
        problem = F.when(text.isNotNull() & cast.isNull(), F.concat(
            F.lit(before), col(column), F.lit(after)))
        (problems if column.lower() in keys else value_problems).append(problem)
        if column.lower() in required:
            value_problems.append(F.when(text.isNull(), F.lit(
                f"column {column} is NULL, but SchemaDefinition declares it IsNullable: false")))
        df = df.withColumn(f"__typed_{column}", cast)
    df = df.withColumn("__read_problem", F.coalesce(*problems))
    df = df.withColumn(_VALUE_PROBLEM, F.coalesce(*value_problems) if value_problems
                       else F.lit(None).cast("string"))
    for column in (first.typed or {}):
        df = df.withColumn(column, F.col(f"`__typed_{column}`")).drop(f"__typed_{column}")
    return df.drop(_CORRUPT), first.marker


def _cell(value: Column, null_value: str) -> Column:
    """A delimited cell after NullValue: only the declared null text is NULL. With the default
    NullValue "" that is an empty unquoted cell (a quoted "" stays an empty string); with any
    other NullValue an empty unquoted cell is an empty string."""
    if null_value == "":
        return value
    return F.when(value == F.lit(null_value), F.lit(None).cast("string")).otherwise(
        F.coalesce(value, F.lit("")))


def _literal_path(path: str) -> str:
    """`path` with Hadoop's glob characters escaped: Spark globs the paths it is given, and a
    landing file may be called `[x]4.parquet`."""
    return _GLOB_CHARS.sub(r"\\\1", path)


def _text_value(value: Column, data_type: str) -> Column:
    """A delimited cell as Spark should cast it to its SchemaDefinition type (an empty cell of
    a type other than String is no value: NULL)."""
    kind = mirroring.canonical_data_type(data_type)
    if kind == "String":
        return value
    value = F.when(value == F.lit(""), F.lit(None).cast("string")).otherwise(value)
    if kind != "ITime":
        return value
    time_only = F.concat(F.lit(mirroring.TIME_ONLY_DATE + " "),
                         F.regexp_replace(F.trim(value), "^T", ""))
    return F.when(value.rlike(mirroring.TIME_ONLY_PATTERN), time_only).otherwise(value)


def read_changes(spark: SparkSession, schemas: list[FileSchema], union: list[T.StructField],
                 metadata: mirroring.TableMetadata) -> DataFrame:
    """One DataFrame of the change rows of `schemas` (files in batch order), tagged and checked.

    `__problem` names what is wrong with a row: an invalid marker, a NULL key in a 1/2/4 row,
    a 1/2/4 row in a keyless table, a malformed record or a value that isn't of its type.
    """
    groups: dict[tuple, list[tuple[int, FileSchema]]] = {}
    for order, schema in enumerate(schemas):
        if schema.file.format == "parquet":
            signature = ("parquet", tuple((f.name, f.dataType.json()) for f in schema.fields),
                         schema.as_micros,
                         schema.marker,
                         schema.marker_type.json() if schema.marker_type else None)
        else:
            signature = ("csv", schema.header)
        groups.setdefault(signature, []).append((order, schema))
    default = metadata.default_marker
    frames = []
    for signature, group in groups.items():
        if signature[0] == "parquet":
            frames.append(_read_parquet_group(spark, group, union, default))
            continue
        df, marker = _read_csv_group(spark, group, metadata)
        df = df.withColumn("__marker_raw", col(marker).cast("string") if marker
                           else F.lit(None).cast("string"))
        df = df.withColumn(MARKER, _marker_expr(
            marker, default, df.schema[marker].dataType if marker else None))
        present = {f.name.lower(): f.name for f in df.schema.fields}
        columns = []
        for field in union:
            source = present.get(field.name.lower())
            if source is None:
                columns.append(F.lit(None).cast(field.dataType).alias(field.name))
            else:
                columns.append(col(source).cast(field.dataType).alias(field.name))
        frames.append(df.select(*columns, MARKER, "__marker_raw", "__read_problem",
                                _VALUE_PROBLEM, F.col(FILE_ORDER), F.col(ROW_ORDER)))
    df = frames[0]
    for frame in frames[1:]:
        df = df.unionByName(frame)
    return df.select(*[col(f.name) for f in union], MARKER, FILE_ORDER, ROW_ORDER,
                     _problem_expr(metadata).alias(PROBLEM))


def _problem_expr(metadata: mirroring.TableMetadata) -> Column:
    keyed = F.col(MARKER).isin(sorted(int(m) for m in mirroring.KEYED_MARKERS))
    problems = [
        F.col("__read_problem"),
        F.when(F.col(MARKER) == INVALID_MARKER, F.concat(
            F.lit(checks.INVALID_MARKER_TEXT[0]), F.col("__marker_raw"),
            F.lit(checks.INVALID_MARKER_TEXT[1]))),
        F.when(F.col(MARKER) != int(mirroring.RowMarker.DELETE), F.col(_VALUE_PROBLEM)),
    ]
    if metadata.keyed:
        null_key = None
        for key in metadata.key_columns:
            test = col(key).isNull()
            null_key = test if null_key is None else (null_key | test)
        null_columns = F.concat_ws(", ", *[F.when(col(key).isNull(), F.lit(key))
                                           for key in metadata.key_columns])
        problems.append(F.when(keyed & null_key, F.concat(
            F.lit(checks.NULL_KEY_TEXT[0]), null_columns, F.lit(checks.NULL_KEY_TEXT[1]),
            F.col(MARKER).cast("string"), F.lit(checks.NULL_KEY_TEXT[2]))))
    else:
        problems.append(F.when(keyed, F.concat(
            F.lit(checks.KEYLESS_TEXT[0]), F.col(MARKER).cast("string"),
            F.lit(checks.KEYLESS_TEXT[1]))))
    return F.coalesce(*problems)


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
