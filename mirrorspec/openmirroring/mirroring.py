"""The open-mirroring rules, in one place (Microsoft's "Open mirroring landing zone
requirements and format").

Both the compiler (which writes `_metadata.json`) and the Spark engine (which reads any
landing zone) use this module; nothing else may restate these rules. It is pure Python.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Callable, Mapping, Sequence

from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base.json_text import dumps_json as dumps_json  # the one printer, named here too

# --- names in the landing zone ------------------------------------------------------------

ROW_MARKER_COLUMN = "__rowMarker__"
METADATA_FILE = "_metadata.json"
PARTNER_EVENTS_FILE = "_partnerEvents.json"
PROCESSED_FOLDER = "_ProcessedFiles"
# The names of the files mirrorspec moved to _ProcessedFiles (its retention purge deletes only these).
PROCESSED_LEDGER_FILE = "_mirrorspec_processed"
SCHEMA_FOLDER_SUFFIX = ".schema"
DEFAULT_SCHEMA = "dbo"
PROCESSED_RETENTION_DAYS = 7

SEQUENCE_DIGITS = 20
_SEQUENCE_NAME = re.compile(r"^(\d{20})\.")


class RowMarker(IntEnum):
    """`__rowMarker__` values and what they do to the row with the same key."""

    INSERT = 0
    UPDATE = 1
    DELETE = 2
    UPSERT = 4


VALID_MARKERS = frozenset(int(m) for m in RowMarker)
KEYED_MARKERS = frozenset({RowMarker.UPDATE, RowMarker.DELETE, RowMarker.UPSERT})


def default_marker(upsert_default: bool) -> int:
    """The marker of a row without one: upsert when isUpsertDefaultRowMarker, else insert."""
    return int(RowMarker.UPSERT if upsert_default else RowMarker.INSERT)


# What the seed asks of the marker column that partner writers often don't do. The engine reads
# such files as the service does (the marker found by name wherever it stands; a numeric string
# read as its number); lint warns, and `--strict` (engine and lint alike) stops the file.
MARKER_NOT_LAST = f"{ROW_MARKER_COLUMN} is not the last column"
MARKER_NOT_INTEGER = "column, not an integer"
STRICT_SUFFIX = " (--strict)"


def marker_column_problems(last: bool, non_integer_type: str | None = None) -> list[str]:
    """What a file's `__rowMarker__` column does against the seed, each with its fix: not the
    last column ("needs to be the final column"), or (`non_integer_type`: its type when a
    Parquet marker column isn't an integer one, e.g. 'string') not the integers 0/1/2/4 the
    seed lists. Empty when neither. Delimited files pass None: every cell there is text."""
    problems = []
    if not last:
        problems.append(f"{MARKER_NOT_LAST}; the landing-zone specification asks for it as the final column")
    if non_integer_type is not None:
        problems.append(f"{ROW_MARKER_COLUMN} is a {non_integer_type} {MARKER_NOT_INTEGER}; "
                        "the landing-zone markers are the integers 0, 1, 2 and 4: write it as int32")
    return problems


def strict_marker_problem(last: bool, non_integer_type: str | None = None) -> str | None:
    """Why `--strict` stops a file for its `__rowMarker__` column (see
    `marker_column_problems`), or None."""
    problems = marker_column_problems(last, non_integer_type)
    return problems[0] + STRICT_SUFFIX if problems else None


# --- file names -----------------------------------------------------------------------------

def sequence_file_name(sequence: int, extension: str = "parquet") -> str:
    """`00000000000000000001.parquet` for sequence 1."""
    if sequence < 1 or sequence >= 10 ** SEQUENCE_DIGITS:
        raise ValueError(f"file sequence {sequence} out of range")
    return f"{sequence:0{SEQUENCE_DIGITS}d}.{extension.lstrip('.')}"


def parse_sequence(file_name: str) -> int | None:
    """The sequence number of a 20-digit file name, or None for any other name."""
    match = _SEQUENCE_NAME.match(file_name)
    return int(match.group(1)) if match else None


COMPRESSION_SUFFIXES = (".gz", ".gzip", ".snappy", ".zst", ".zstd")


def is_reserved_name(name: str) -> bool:
    """Names starting with `_` are never data (`_metadata.json`, `_ProcessedFiles`, `_0001.tmp`…)."""
    return name.startswith("_") or name.startswith(".")


def data_file_format(file_name: str, file_extension: str | None = None) -> str | None:
    """'parquet' or 'csv' (delimited) for a landing data file name, else None (not data).

    `file_extension` is `_metadata.json`'s FileExtension (e.g. 'tsv') for DelimitedText tables.
    Compression suffixes (.gz, .snappy, .zst) are looked through.
    """
    if is_reserved_name(file_name):
        return None
    lower = file_name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if lower.endswith(suffix) and not lower.endswith(".parquet" + suffix):
            lower = lower[: -len(suffix)]
            break
    if lower.endswith(".parquet"):
        return "parquet"
    if lower.endswith(".csv"):
        return "csv"
    if file_extension and lower.endswith("." + file_extension.lower().lstrip(".")):
        return "csv"
    return None


def table_folder(table: str, schema: str | None) -> str:
    """Landing-zone folder of a table, relative to the landing zone root."""
    return f"{schema}{SCHEMA_FOLDER_SUFFIX}/{table}" if schema else table


def schema_from_folder(folder_name: str) -> str | None:
    """'sales' for 'sales.schema', None for a folder that isn't a schema folder."""
    if folder_name.endswith(SCHEMA_FOLDER_SUFFIX) and len(folder_name) > len(SCHEMA_FOLDER_SUFFIX):
        return folder_name[: -len(SCHEMA_FOLDER_SUFFIX)]
    return None


def warehouse_schema(schema: str | None) -> str:
    """Tables at the landing-zone root live in warehouse schema `dbo`."""
    return schema or DEFAULT_SCHEMA


def mirror_id(schema: str | None, table: str) -> str:
    """Stable identity of a mirrored table, used as the Delta `txn` appId prefix."""
    return f"mirrorspec:{warehouse_schema(schema)}.{table}"


# --- names users may give tables and columns ---------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# A column may start with one '_' (MongoDB's `_id`, which its Fabric connector declares as
# keyColumns and the service mirrors). Reserved: '__' (the row marker `__rowMarker__`, and the
# engine's working columns) and the canonical change columns of mirrorspec's publisher
# (`mirrorspec.sources.base`; a test keeps the two lists equal).
RESERVED_COLUMN_PREFIX = "__"
RESERVED_COLUMNS = frozenset({"_op", "_order", "_present", "_source_file", "_source_line",
                              "_pair", "_error", "_parse_error", "_tie", "_rank"})


def unsafe_name_reason(name: str, column: bool = False) -> str | None:
    """Why `name` can't be a table, schema (or, with `column`, column) name in the landing zone,
    or None. Table and schema names are folders, so no leading '_'; column names may have one."""
    if name == "":
        return "is empty"
    if name == ROW_MARKER_COLUMN:
        return f"'{ROW_MARKER_COLUMN}' is reserved for the row marker"
    if "/" in name or "\\" in name:
        return "contains a path separator"
    if name == ".":
        return "is '.' (the folder itself)"
    if ".." in name:
        return "contains '..'"
    if column and name.startswith(RESERVED_COLUMN_PREFIX):
        return (f"starts with '{RESERVED_COLUMN_PREFIX}' (reserved for the row marker and the "
                "engine's working columns)")
    if column and name.lower() in RESERVED_COLUMNS:
        return "is reserved for mirrorspec's change columns (_op, _order, _present, …)"
    if column and name.lower() in ENGINE_COLUMNS:
        return f"{ENGINE_COLUMN_TEXT} (Spark's hidden _metadata column)"
    if name.startswith("_") and not column:
        return "starts with '_' (the landing zone treats such names as non-data)"
    if name.startswith("."):
        return "starts with '.' (the landing zone treats such names as hidden; never mirrored)"
    if _CONTROL.search(name):
        return "contains a control character"
    if name != name.strip():
        return "has leading or trailing white space"
    return None


# The engine's working columns (mirrorspec/spark/mirror: batch.py, fold.py, staged_source.py)
# and Spark's hidden `_metadata` column, which tells each row's file. A landing column of the
# same name (Spark compares names case-insensitively) would be overwritten by the engine's value
# or hide Spark's, so such a file stops its table with `engine_column_clash`. Other names
# starting with '__' (`__rowid__`, Debezium's `__op`, `__deleted`) are ordinary columns. A unit
# test keeps this list equal to the names in the engine's code.
ENGINE_COLUMNS = frozenset({
    "_metadata",
    "__marker", "__problem", "__file_order", "__row_order", "__corrupt_record",
    "__value_problem", "__read_problem", "__marker_raw",
    "__is_reset", "__action", "__insert_if_absent", "__ord", "__j", "__after", "__p",
    "__first", "__ins_before_p", "__copies", "__reset", "__act", "__iia", "__i",
})
ENGINE_COLUMN_PREFIXES = ("__typed_", "__mirrorspec_")
ENGINE_COLUMN_TEXT = "is a name the mirroring engine works with"


def engine_column_clash(name: str) -> str | None:
    """Why a landing column called `name` can't be mirrored by this engine, or None."""
    lower = name.lower()
    if lower not in ENGINE_COLUMNS and not lower.startswith(ENGINE_COLUMN_PREFIXES):
        return None
    return (f"column {name!r} {ENGINE_COLUMN_TEXT} (its own columns, or Spark's hidden "
            "_metadata); mirroring it would overwrite its values: rename the column in the "
            "files (the Fabric service reserves only __rowMarker__), then re-write them")


def delete_not_nullable(column: str) -> str:
    """What lint says of a delete row that leaves `column`, declared `IsNullable: false`, empty:
    the engine applies it (a delete needs only its key columns), but the service has
    been reported to fail such rows (docs/semantics.md, "Business Central (bc2adls) threads")."""
    return (f"a delete row leaves column {column} (IsNullable: false) empty: mirrorspec applies "
            "it (a delete needs only its key columns), but Fabric has been reported to fail "
            "such rows; declare non-key columns IsNullable: true")


# --- data types -------------------------------------------------------------------------------

# Parquet columns of the Null logical type (what pandas/pyarrow write for an all-null column,
# typically a delete file's non-key columns) stop the table in the real service: it reads such
# a column as its physical INT32 and failed a table whose column was a string with
# `SchemaMergeFailure` ("incoming type integer, existing type string"), at that file (evidence:
# docs/semantics.md, "Null-typed Parquet columns"). The engine and lint stop at such a file too.
NULL_TYPE_CODE = "SchemaMergeFailure"
NULL_TYPE_TEXT = "has the Parquet Null logical type"


def null_type_reason(column: str) -> str:
    """Why a landing file whose Parquet column `column` is of the Null logical type stops its
    table, and the fix."""
    return (f"column {column!r} {NULL_TYPE_TEXT} (an all-null column as pandas/pyarrow write "
            "it); Fabric reads it as an integer and stops the table with SchemaMergeFailure "
            "(\"incoming type integer, existing type string\"). Write the column with its real "
            f"type (cast it, e.g. pyarrow.array([None]*n, pyarrow.string()) or "
            f"df[{column!r}].astype('string')), or drop it from delete rows (they need only "
            "the key columns); then re-write the file under the same name")

# The SchemaDefinition DataTypes the seed lists, with the Spark SQL type each is read as.
# The seed describes ITime as "a full date and time value", so it is read as a timestamp.
DATA_TYPES: dict[str, str] = {
    "Double": "double",
    "Single": "float",
    "Int16": "smallint",
    "Int32": "int",
    "Int64": "bigint",
    "DateTime": "timestamp",
    "IDate": "date",
    "ITime": "timestamp",
    "String": "string",
    "Boolean": "boolean",
    "ByteArray": "binary",
}
_DATA_TYPES_CI = {name.lower(): name for name in DATA_TYPES}

# An ITime cell holding only a time of day ("14:30:00", "T14:30:00.5") is that time on this
# date, so the value never depends on the day it was read.
TIME_ONLY_DATE = "1970-01-01"
TIME_ONLY_PATTERN = r"^\s*T?\d{1,2}:\d{2}(:\d{2}(\.\d{1,9})?)?Z?\s*$"


def canonical_data_type(name: str) -> str | None:
    """The seed's spelling of a DataType (matched case-insensitively), or None if unknown."""
    return _DATA_TYPES_CI.get(str(name).lower())


# Type names from other systems → the DataTypes a user most likely means (did-you-mean only).
_DATA_TYPE_ALIASES = {
    "integer": ("Int32", "Int64"), "int": ("Int32", "Int64"), "bigint": ("Int64",),
    "long": ("Int64",), "smallint": ("Int16",), "short": ("Int16",), "tinyint": ("Int16",),
    "float": ("Double", "Single"), "real": ("Single",), "decimal": ("Double", "String"),
    "numeric": ("Double", "String"), "number": ("Double", "Int64"), "double precision": ("Double",),
    "bool": ("Boolean",), "bit": ("Boolean",), "str": ("String",), "text": ("String",),
    "varchar": ("String",), "char": ("String",), "nvarchar": ("String",), "string": ("String",),
    "timestamp": ("DateTime",), "datetime2": ("DateTime",), "date": ("IDate",),
    "time": ("ITime",), "binary": ("ByteArray",), "bytes": ("ByteArray",),
    "varbinary": ("ByteArray",), "blob": ("ByteArray",),
}


def data_type_suggestions(name: str) -> tuple[str, ...]:
    """The DataTypes a user probably meant by an unknown type name ('Integer' → Int32, Int64)."""
    text = str(name).strip().lower()
    if text in _DATA_TYPE_ALIASES:
        return _DATA_TYPE_ALIASES[text]
    for prefix, types in (("int", ("Int32", "Int64")), ("varchar", ("String",)),
                          ("decimal", ("Double", "String")), ("timestamp", ("DateTime",))):
        if text.startswith(prefix):
            return types
    return ()


def spark_type_for(data_type: str) -> str:
    """Spark SQL type name for a SchemaDefinition DataType."""
    canonical = canonical_data_type(data_type)
    if canonical is None:
        raise ValueError(f"unknown DataType {data_type!r}; expected one of {', '.join(DATA_TYPES)}")
    return DATA_TYPES[canonical]


# --- delimited text ---------------------------------------------------------------------------

FILE_FORMAT_CSV = "CSV"
FILE_FORMAT_DELIMITED = "DelimitedText"
FILE_FORMAT_PARQUET = "Parquet"

# property name → (default, allowed values or None for free text)
DELIMITED_PROPERTIES: dict[str, tuple[Any, tuple[Any, ...] | None]] = {
    "FirstRowAsHeader": (True, (True,)),
    "RowSeparator": ("\r\n", ("\r\n", "\n", "\r")),
    "ColumnSeparator": (",", (",", ";", "|", "\t")),
    "QuoteCharacter": ('"', ('"', "'", "")),
    "EscapeCharacter": ("\\", ("\\", "/", '"', "")),
    "NullValue": ("", None),
    "Encoding": ("UTF-8", None),
}


@dataclass(frozen=True)
class ColumnDefinition:
    """One SchemaDefinition column."""

    name: str
    data_type: str
    nullable: bool | None = True  # None: not said (IsNullable omitted)


@dataclass(frozen=True)
class DelimitedOptions:
    """FileFormatTypeProperties with the seed's defaults filled in."""

    first_row_as_header: bool = True
    row_separator: str = "\r\n"
    column_separator: str = ","
    quote_character: str = '"'
    escape_character: str = "\\"
    null_value: str = ""
    encoding: str = "UTF-8"


@dataclass(frozen=True)
class TableMetadata:
    """A parsed `_metadata.json`: what the engine needs to read and apply a table's files."""

    key_columns: tuple[str, ...] = ()
    last_update_time_detection: bool = False
    upsert_default: bool = False
    file_format: str = FILE_FORMAT_CSV  # as declared; parquet files are recognised by name
    file_extension: str | None = None
    delimited: DelimitedOptions = field(default_factory=DelimitedOptions)
    columns: tuple[ColumnDefinition, ...] = ()
    present: bool = True  # False when the folder has no _metadata.json
    warnings: tuple[str, ...] = ()  # what was ignored (properties the seed doesn't define)

    @property
    def default_marker(self) -> int:
        return default_marker(self.upsert_default)

    @property
    def keyed(self) -> bool:
        return bool(self.key_columns)


FILE_DETECTION_LAST_UPDATE_TIME = "LastUpdateTimeFileDetection"
FILE_DETECTION_SEQUENTIAL = "SequentialFileDetection"  # our name for the default; never written

# The keys `_metadata.json` may hold (lower case → as the seed spells them); others are warned
# about with a did-you-mean.
_METADATA_KEYS = {
    "keycolumns": "keyColumns",
    "filedetectionstrategy": "fileDetectionStrategy",
    "isupsertdefaultrowmarker": "isUpsertDefaultRowMarker",
    "schemadefinition": "SchemaDefinition",
    "fileformat": "FileFormat",
    "fileextension": "FileExtension",
    "fileformattypeproperties": "FileFormatTypeProperties",
}


def _ci(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in mapping.items()}


def _as_bool(value: Any, what: str, file: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise LandingZoneError(f"{what} must be true or false, not {value!r}", file=file,
                           code="InvalidMetadata")


def parse_metadata_text(text: str, file: str) -> TableMetadata:
    """Parse the text of a `_metadata.json` (keys matched case-insensitively)."""
    if not text.strip():
        raise LandingZoneError(
            "_metadata.json is empty" + (" (0 bytes)" if not text else ""), file=file,
            code="InvalidMetadata",
            hint='write a JSON object: {"keyColumns": ["id"]}, or {} for a table without keys '
                 "(a producer writes it whole, then renames it into place)")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LandingZoneError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                               file=file, row=exc.lineno, code="InvalidMetadata",
                               hint="fix the JSON; the table resumes on the next run") from None
    if not isinstance(raw, dict):
        raise LandingZoneError("_metadata.json must hold a JSON object", file=file,
                               code="InvalidMetadata")
    return parse_metadata(raw, file)


def parse_metadata(raw: Mapping[str, Any], file: str) -> TableMetadata:
    """Turn a `_metadata.json` object into TableMetadata, rejecting invalid values."""
    data = _ci(raw)

    def bad(message: str) -> LandingZoneError:
        return LandingZoneError(message, file=file, code="InvalidMetadata",
                                hint="fix _metadata.json; the table resumes on the next run")

    keys = data.get("keycolumns", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise bad(f"keyColumns must be a list of column names such as [\"id\"], not "
                  f"{json.dumps(keys)[:80]}")
    if len(set(keys)) != len(keys):
        raise bad("keyColumns lists a column twice")

    detection = data.get("filedetectionstrategy")
    if detection is None or str(detection).lower() in ("", FILE_DETECTION_SEQUENTIAL.lower()):
        last_update = False
    elif str(detection).lower() == FILE_DETECTION_LAST_UPDATE_TIME.lower():
        last_update = True
    else:
        raise bad(f"fileDetectionStrategy {detection!r} is not {FILE_DETECTION_LAST_UPDATE_TIME!r}")

    upsert = data.get("isupsertdefaultrowmarker", False)
    upsert = False if upsert is None else _as_bool(upsert, "isUpsertDefaultRowMarker", file)

    file_format = data.get("fileformat") or FILE_FORMAT_CSV
    if not isinstance(file_format, str) or file_format.lower() not in (
            "csv", "delimitedtext", "parquet"):
        raise bad(f"FileFormat {file_format!r} is not CSV, DelimitedText or Parquet")
    file_format = {"csv": FILE_FORMAT_CSV, "delimitedtext": FILE_FORMAT_DELIMITED,
                   "parquet": FILE_FORMAT_PARQUET}[file_format.lower()]
    extension = data.get("fileextension")
    if extension is not None and (not isinstance(extension, str) or not extension.strip(". ")):
        raise bad(f"FileExtension {extension!r} must be a file extension such as 'tsv'")
    extension = extension.strip().lstrip(".") if extension else None
    if file_format == FILE_FORMAT_DELIMITED and not extension:
        raise bad("FileExtension is required when FileFormat is DelimitedText")

    warnings: list[str] = [_unknown_key_warning(key) for key in raw
                           if str(key).lower() not in _METADATA_KEYS]
    delimited = _parse_delimited(data.get("fileformattypeproperties") or {}, bad, warnings)
    columns = _parse_schema_definition(data.get("schemadefinition"), bad)
    return TableMetadata(
        key_columns=tuple(keys),
        last_update_time_detection=last_update,
        upsert_default=upsert,
        file_format=file_format,
        file_extension=extension,
        delimited=delimited,
        columns=columns,
        warnings=tuple(f"{file}: {w}" for w in warnings),
    )


def _unknown_key_warning(key: Any) -> str:
    from mirrorspec.base.suggest import suggest

    return f"unknown key '{key}' ignored{suggest(key, _METADATA_KEYS.values())}"


def _parse_delimited(props: Any, bad: Callable[[str], LandingZoneError], warnings: list[str]) -> DelimitedOptions:
    if not isinstance(props, dict):
        raise bad("FileFormatTypeProperties must be an object")
    spelled = list(props)
    props = _ci(props)
    values: dict[str, Any] = {}
    for name, (default, allowed) in DELIMITED_PROPERTIES.items():
        value = props.get(name.lower(), default)
        if value is None:
            value = default
        if name == "FirstRowAsHeader":
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if value is not True:
                raise bad("FirstRowAsHeader must be true: delimited files need a header row")
        elif not isinstance(value, str):
            raise bad(f"{name} must be a string, not {value!r}")
        elif allowed is not None and value not in allowed:
            shown = ", ".join(json.dumps(a) for a in allowed)
            raise bad(f"{name} {json.dumps(value)} is not supported; use one of {shown}")
        values[name] = value
    known = {n.lower() for n in DELIMITED_PROPERTIES}
    unknown = [str(name) for name in spelled if str(name).lower() not in known]
    if unknown:  # another producer's extension: reading goes on with the seed's properties
        warnings.append(f"FileFormatTypeProperties {', '.join(sorted(unknown))} ignored (not "
                        "one of the landing-zone specification's delimited-text properties)")
    return DelimitedOptions(
        first_row_as_header=values["FirstRowAsHeader"],
        row_separator=values["RowSeparator"],
        column_separator=values["ColumnSeparator"],
        quote_character=values["QuoteCharacter"],
        escape_character=values["EscapeCharacter"],
        null_value=values["NullValue"],
        encoding=values["Encoding"],
    )


def _parse_schema_definition(schema: Any, bad: Callable[[str], LandingZoneError]) -> tuple[ColumnDefinition, ...]:
    if schema is None:
        return ()
    if not isinstance(schema, dict):
        raise bad("SchemaDefinition must be an object with Columns")
    columns = _ci(schema).get("columns") or []
    if not isinstance(columns, list):
        raise bad("SchemaDefinition.Columns must be a list")
    result = []
    seen = set()
    for index, column in enumerate(columns):
        if not isinstance(column, dict):
            raise bad(f"SchemaDefinition.Columns[{index}] must be an object")
        column = _ci(column)
        name = column.get("name")
        if not isinstance(name, str) or not name:
            raise bad(f"SchemaDefinition.Columns[{index}].Name is missing")
        if name.lower() in seen:
            raise bad(f"SchemaDefinition declares column {name!r} twice")
        seen.add(name.lower())
        data_type = canonical_data_type(column.get("datatype", "String"))
        if data_type is None:
            raise bad(f"SchemaDefinition column {name!r}: unknown DataType "
                      f"{column.get('datatype')!r}; use one of {', '.join(DATA_TYPES)}")
        nullable = column.get("isnullable", True)
        if isinstance(nullable, str) and nullable.strip().lower() in ("true", "false"):
            nullable = nullable.strip().lower() == "true"
        elif nullable is None:
            nullable = True
        elif not isinstance(nullable, bool):
            raise bad(f"SchemaDefinition column {name!r}: IsNullable must be true or false, "
                      f"not {nullable!r}")
        result.append(ColumnDefinition(name, data_type, nullable))
    return tuple(result)


# --- rules over time: what a mirrored table allows its folder to do next ---------------------

KEY_CHANGED_CODE = "KeyColumnsChanged"


def keys_differ(before: Sequence[str], after: Sequence[str]) -> bool:
    """Whether two keyColumns lists name different keys (the landing-zone specification: "once added
    keyColumns can't be changed"). A key is a set of columns: names compare case-insensitively, as
    columns do, and their order doesn't count (rows match on the same values either way). The
    engine, lint, compile, `diff` and the `_metadata.json` deploy all decide with this."""
    return sorted(k.lower() for k in before) != sorted(k.lower() for k in after)


def key_change(mirrored: Sequence[str] | None, declared: Sequence[str]) -> str | None:
    """The problem when a table mirrored with keys `mirrored` (None: never mirrored) now
    declares `declared` (see `keys_differ`), else None. `lint` and the engine both say this."""
    if mirrored is None or not keys_differ(mirrored, declared):
        return None
    return (f"keyColumns are {list(declared)}, but the table was mirrored with "
            f"{list(mirrored)}; keys can't change once added: recreate the table folder")


ATOMIC_PLACEMENT = ("the producer must write each file under a temporary name (starting with "
                    "'_') and rename it into place once complete, never append to or rewrite "
                    "a placed file")


def late_file_problem(name: str, sequence: int | None, applied: int) -> str | None:
    """Why the 20-digit file `name`, sorting at or before the last applied sequence `applied`,
    is never applied (sequence 0 included: files are numbered from 1), else None. The text
    follows the file's path in a warning."""
    if sequence is None or sequence > applied:
        return None
    if sequence == 0:
        first = sequence_file_name(1, name.split(".", 1)[1] if "." in name else "parquet")
        return (f"sequence 0 is never applied (the first file is {first}); land its rows "
                "under the next sequence number instead")
    return (f"sequence {sequence} was already applied (the table is at {applied}); this file "
            f"is never applied: land new changes under the next sequence number "
            f"({applied + 1}); {ATOMIC_PLACEMENT}")


def changed_file_problem(applied: bool) -> str:
    """Why a file whose size, time or ETag changed since it was listed is a problem: while a
    batch read it (`applied` False: it waits for the next pass), or after it was applied
    (written in place, or placed again under a name already applied: what it gained is never
    applied). The text follows the file's path in a warning."""
    if applied:
        return ("changed after it was applied (written in place, or placed again under a name "
                "already applied); what it holds beyond what was applied is never applied: "
                f"{ATOMIC_PLACEMENT}, or set settle_seconds for producers that write in place")
    return ("changed while this pass read it (still being written?); not applied in this "
            f"pass, retried on the next: {ATOMIC_PLACEMENT}, or set settle_seconds for "
            "producers that write in place")


def render_metadata(
    key_columns: list[str] | tuple[str, ...] = (),
    last_update_time_detection: bool = False,
    upsert_default: bool | None = None,
    columns: list[ColumnDefinition] | tuple[ColumnDefinition, ...] = (),
    file_format: str | None = None,
    file_extension: str | None = None,
    delimited: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The `_metadata.json` object for a table, with exactly the documented property names and
    only what was set. `delimited` holds FileFormatTypeProperties by their seed names."""
    doc: dict[str, Any] = {}
    if key_columns:
        doc["keyColumns"] = list(key_columns)
    if last_update_time_detection:
        doc["fileDetectionStrategy"] = FILE_DETECTION_LAST_UPDATE_TIME
    if upsert_default is not None:
        doc["isUpsertDefaultRowMarker"] = bool(upsert_default)
    if columns:
        cols = []
        for column in columns:
            entry: dict[str, Any] = {"Name": column.name, "DataType": column.data_type}
            if column.nullable is not None:  # None: the user didn't say; omit IsNullable
                entry["IsNullable"] = bool(column.nullable)
            cols.append(entry)
        doc["SchemaDefinition"] = {"Columns": cols}
    if file_format:
        doc["FileFormat"] = file_format
    if file_extension:
        doc["FileExtension"] = file_extension.lstrip(".")
    if delimited:
        doc["FileFormatTypeProperties"] = {
            name: delimited[name] for name in DELIMITED_PROPERTIES if name in delimited}
    return doc


def render_partner_events(partner_name: str, source_type: str | None = None,
                          source_version: str | None = None,
                          additional_information: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `_partnerEvents.json` object (placed at the landing-zone root, not per table)."""
    source_info: dict[str, Any] = {}
    if source_type is not None:
        source_info["sourceType"] = source_type
    if source_version is not None:
        source_info["sourceVersion"] = str(source_version)
    if additional_information:
        source_info["additionalInformation"] = dict(additional_information)
    doc: dict[str, Any] = {"partnerName": partner_name}
    if source_info:
        doc["sourceInfo"] = source_info
    return doc
