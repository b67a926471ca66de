"""The checks of landing files that need no JVM, shared by the engine and `mirrorspec lint`.

The Spark engine (`mirrorspec.spark.mirror.batch`, `mirrorspec.spark.mirror.engine`) and the linter call the
same functions here, so both decide alike which file stops a table: the header of a delimited
file and its dialect, a Parquet footer, a file's columns against the table's (keys present, no
type change), and the marker/key rules of each row. Pure Python with pyarrow.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import itertools
from typing import Any, Callable, Iterator, Sequence

from mirrorspec.base import delimited_text
from mirrorspec.openmirroring import compression, mirroring
from mirrorspec.base.errors import LandingZoneError

HEADER_BYTES = 1 << 16
_DECODE_CHUNK = 1 << 22

# Python codec names for the Java charset names producers write.
_PY_ENCODINGS = {"windows-1252": "cp1252", "us-ascii": "ascii", "utf8": "utf-8"}

ZERO_BYTE_MESSAGE = ("zero-byte file (a file must hold at least its Parquet footer or header row); "
                     "re-write it under the same name")
# Parquet codecs the seed lists (uncompressed, Snappy, GZIP, ZSTD); Spark reads these too.
PARQUET_CODECS = ("UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD")

# Row problems, as (prefix, suffix) around the raw marker value so that the Spark expression
# (reader._problem_expr) and the pyarrow check spell them alike.
INVALID_MARKER_TEXT = (f"{mirroring.ROW_MARKER_COLUMN} '",
                       "' is not one of 0 (insert), 1 (update), 2 (delete), 4 (upsert)")


# The problem of a 1/2/4 row with a NULL key: these three around the NULL columns (only those,
# comma-separated) and the marker, so the Spark expression and the Python checks spell it alike.
NULL_KEY_TEXT = ("NULL in key column(s) ", f" of a row with {mirroring.ROW_MARKER_COLUMN} ",
                 " (only inserts may have NULL keys)")


def null_key_problem(null_columns: Sequence[str], marker: Any) -> str:
    """The problem of a row with `marker` whose key columns `null_columns` are NULL."""
    return NULL_KEY_TEXT[0] + ", ".join(null_columns) + NULL_KEY_TEXT[1] + str(marker) \
        + NULL_KEY_TEXT[2]


def null_key_columns(problem: str) -> str | None:
    """The NULL key columns a null_key_problem() names, or None for another problem."""
    if not problem.startswith(NULL_KEY_TEXT[0]) or NULL_KEY_TEXT[1] not in problem:
        return None
    return problem[len(NULL_KEY_TEXT[0]):problem.index(NULL_KEY_TEXT[1])]


MALFORMED_TEXT = ("malformed delimited record (more or fewer cells than the header, "
                  "or an unclosed quote)")
KEYLESS_TEXT = (f"{mirroring.ROW_MARKER_COLUMN} ",
                " needs keyColumns, but the table has none (declare keyColumns in "
                "_metadata.json; without them only inserts are possible)")


# What to do about a cell that isn't of its column's type (`delimited_text.cell_type_parts`).
VALUE_TODO = "; fix the value and re-write the file under the same name"


def value_type_parts(column: str, field: int, data_type: str) -> tuple[str, str]:
    """The problem of a delimited cell that isn't of its SchemaDefinition type, as the text
    before and after its raw value: the Spark check (`batch._read_csv_group`) and lint put the
    value between them alike."""
    before, after = delimited_text.cell_type_parts(column, field, data_type)
    return before, after + VALUE_TODO


def data_row_line(filesystem, file, options: mirroring.DelimitedOptions, row: int) -> int | None:
    """The line (1-based, as an editor numbers it) where data row `row` of a delimited landing
    file starts: the header and quoted line breaks counted. Reads the file again: for the error
    path only. None when the file can't be read or has fewer rows."""
    try:
        text = decode(read_start(filesystem, file, None), file, options, errors="replace")
    except LandingZoneError:
        return None
    return delimited_text.line_of_data_row(text, csv_dialect(options), row)


def is_marker(name: str) -> bool:
    """True for the row marker column, however its case is spelled."""
    return name.lower() == mirroring.ROW_MARKER_COLUMN.lower()


# --- delimited files: dialect and header ------------------------------------------------------

def csv_dialect(options: mirroring.DelimitedOptions) -> dict:
    """Python `csv` reader arguments for a table's FileFormatTypeProperties."""
    quote = options.quote_character
    escape = options.escape_character
    return {
        "delimiter": options.column_separator,
        "quotechar": quote or None,
        "quoting": csv.QUOTE_MINIMAL if quote else csv.QUOTE_NONE,
        "escapechar": (escape if escape and escape != quote else None),
        "doublequote": bool(quote) and escape == quote,
    }


def python_encoding(encoding: str) -> str:
    """The Python codec name of a Java charset name (`windows-1252` → `cp1252`)."""
    return _PY_ENCODINGS.get(encoding.lower(), encoding)


def _unreadable(exc: Exception, file) -> LandingZoneError:
    """The BadFile error of a compressed file its codec can't read."""
    return LandingZoneError(f"not a readable compressed file: {exc}", file=file.path,
                            code="BadFile", hint="re-write the file under the same name")


def text_chunks(filesystem, file, limit: int | None = None) -> Iterator[bytes]:
    """A delimited file's text in chunks, decompressed (.gz, .zst, .snappy) as Spark reads its
    rows: its first `limit` bytes, or all of it when None. BadFile for bytes its codec can't
    read."""
    left = limit
    try:
        with _open_text(filesystem, file) as stream:
            while left is None or left > 0:
                chunk = stream.read(_DECODE_CHUNK if left is None else min(left, _DECODE_CHUNK))
                if not chunk:
                    return
                yield chunk
                left = None if left is None else left - len(chunk)
    except compression.CorruptCompressedFile as exc:
        raise _unreadable(exc, file) from None


def read_start(filesystem, file, size: int | None = HEADER_BYTES) -> bytes:
    """The first `size` bytes (all when None) of a delimited file's text, decompressed."""
    return b"".join(text_chunks(filesystem, file, size))


def parse_header(text: str, file, options: mirroring.DelimitedOptions) -> list[str]:
    """The header row (first record) of a delimited file's decoded text."""
    text = text.lstrip("\ufeff")
    try:
        row = next(csv.reader(io.StringIO(text, newline=""), **csv_dialect(options)), None)
    except csv.Error as exc:
        raise LandingZoneError(f"malformed header row: {exc}", file=file.path, row=1,
                               code="BadFile") from None
    if not row or all(not c.strip() for c in row):
        raise LandingZoneError("the header row is missing (FirstRowAsHeader is required)",
                               file=file.path, row=1, code="BadFile")
    header = [c.strip() for c in row]
    if "" in header:
        raise LandingZoneError(
            f"header column {header.index('') + 1} has no name (a trailing separator?)",
            file=file.path, row=1, code="BadFile",
            hint="name every column in the header row, then re-write the file")
    return header


def decode(data: bytes, file, options: mirroring.DelimitedOptions, errors: str = "ignore") -> str:
    """A delimited file's bytes as text in its declared Encoding."""
    try:
        return data.decode(python_encoding(options.encoding), errors=errors)
    except LookupError:
        raise LandingZoneError(f"unknown Encoding {options.encoding!r}", file=file.path,
                               code="InvalidMetadata") from None


def read_header(filesystem, file, options: mirroring.DelimitedOptions) -> list[str]:
    """The header row of a delimited file (its first record)."""
    return parse_header(decode(read_start(filesystem, file), file, options), file, options)


def check_encoding(filesystem, file, options: mirroring.DelimitedOptions) -> None:
    """Raise BadFile naming the line of the first bytes that aren't valid in the file's Encoding
    (Spark would store U+FFFD for them, silently). One streaming pass of Python's C codec."""
    decoder = codecs.getincrementaldecoder(python_encoding(options.encoding))("strict")
    line = 1
    for chunk in itertools.chain(text_chunks(filesystem, file), [b""]):  # b"": the final decode
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            before = chunk[:exc.start].decode(python_encoding(options.encoding), "replace")
            bad = exc.object[exc.start:exc.start + 4]
            raise LandingZoneError(
                f"bytes {bad!r} are not valid "
                f"{options.encoding} ({exc.reason})", file=file.path,
                row=line + before.count("\n"), code="BadFile",
                hint="re-write the file in the Encoding its _metadata.json declares "
                     "(FileFormatTypeProperties.Encoding), under the same name") from None
        line += text.count("\n")


@contextlib.contextmanager
def _open_text(filesystem, file):
    """The file's bytes as a stream, decompressed (.gz, .zst, .snappy) as Spark reads them;
    its `read` raises `compression.CorruptCompressedFile` for bytes the codec can't read."""
    with filesystem.open_stream(file.path) as handle, \
            compression.open_decompressed(handle, file.name) as stream:
        yield stream


# --- a file's columns against the table's ------------------------------------------------------

def extend_columns(fields: list, union: list, key_columns: Sequence[str], strict: bool,
                   marker_last: bool, *, type_of: Callable[[Any], Any],
                   is_null: Callable[[Any], bool], show: Callable[[Any], str],
                   retyped: Callable[[Any, Any], Any],
                   marker_non_integer: str | None = None) -> str | None:
    """Why a file with columns `fields` (marker apart) can't be applied after the columns in
    `union`, or None. Extends `union` with the file's new columns (first-seen order).
    `marker_last` and `marker_non_integer` describe its marker column for `strict`
    (`mirroring.strict_marker_problem`).

    Works on any column objects with `.name`: the engine passes Spark StructFields, lint its own
    (name, type name) columns; `type_of`, `is_null`, `show` and `retyped` read and rebuild them.
    """
    if strict:
        problem = mirroring.strict_marker_problem(marker_last, marker_non_integer)
        if problem is not None:
            return problem
    names = {f.name.lower() for f in fields}
    missing = [k for k in key_columns if k.lower() not in names]
    if missing:
        return (f"key column(s) {', '.join(missing)} missing from the file "
                f"(keyColumns: {', '.join(key_columns)})")
    known = {f.name.lower(): i for i, f in enumerate(union)}
    seen = set()
    for field in fields:
        lower = field.name.lower()
        if lower in seen:
            return f"column {field.name!r} appears twice"
        seen.add(lower)
        clash = mirroring.engine_column_clash(field.name)
        if clash is not None:
            return clash
        if is_null(type_of(field)):  # only Parquet columns of the Null logical type are
            return mirroring.null_type_reason(field.name)
        if lower not in known:
            union.append(field)
            known[lower] = len(union) - 1
            continue
        current = union[known[lower]]
        if is_null(type_of(current)):
            union[known[lower]] = retyped(current, type_of(field))
        elif not is_null(type_of(field)) and type_of(field) != type_of(current):
            return (f"column {field.name!r} changed type from {show(type_of(current))} "
                    f"to {show(type_of(field))}; recreate the table folder to change a "
                    "column type")
    return None


# --- Parquet -----------------------------------------------------------------------------------

def parquet_footer(path: str, file_path: str | None = None):
    """The `pyarrow.parquet.FileMetaData` of a local Parquet file; LandingZoneError (BadFile)
    when its footer can't be read."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata
    except Exception as exc:  # any footer problem means the file is unreadable
        raise LandingZoneError(f"not a readable Parquet file: {exc}", file=file_path or path,
                               code="BadFile", hint="re-write the file under the same name") from exc


def unsupported_codecs(footer) -> list[str]:
    """Codecs of a Parquet file's column chunks that the seed doesn't list (e.g. BROTLI)."""
    found = set()
    for group in range(footer.num_row_groups):
        row_group = footer.row_group(group)
        for column in range(row_group.num_columns):
            found.add(str(row_group.column(column).compression).upper())
    return sorted(found - set(PARQUET_CODECS))


# Dates and timestamps a Delta table (protocol: 0001-01-01 to 9999-12-31) and Python's datetime
# hold, in seconds from 1970-01-01; Spark's reader takes values far beyond (year 200000), which
# then break every reader of the table (`show`'s OverflowError).
TIME_MIN_SECONDS = -62_135_596_800  # 0001-01-01T00:00:00
TIME_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000}  # nanoseconds can't leave the range
_DAY = 86_400


def _time_bounds(arrow_type) -> tuple[int, int, float] | None:
    """(lowest, highest) raw integer of a date/timestamp column in range and its units per
    second; None when every value is in range."""
    import pyarrow as pa

    if pa.types.is_timestamp(arrow_type) and arrow_type.unit in _PER_SECOND:
        per = _PER_SECOND[arrow_type.unit]
        return TIME_MIN_SECONDS * per, TIME_MAX_SECONDS * per + per - 1, per
    if pa.types.is_date32(arrow_type):
        return TIME_MIN_SECONDS // _DAY, TIME_MAX_SECONDS // _DAY, 1 / _DAY
    if pa.types.is_date64(arrow_type):
        return TIME_MIN_SECONDS * 1000, TIME_MAX_SECONDS * 1000 + 999, 1000
    return None


def time_range_problem(path: str) -> tuple[int, str, str] | None:
    """`(row, column, problem)` of the first date or timestamp of a local Parquet file outside
    0001-01-01 … 9999-12-31 (row 1-based), or None. Row groups whose footer statistics are in
    range are not read."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    bounds = {f.name: b for f in parquet.schema_arrow if (b := _time_bounds(f.type)) is not None}
    if not bounds:
        return None
    footer = parquet.metadata
    offset = 0
    for group in range(footer.num_row_groups):
        row_group = footer.row_group(group)
        unproven = []
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            name = chunk.path_in_schema
            if name not in bounds:
                continue
            stats = chunk.statistics
            low, high, _ = bounds[name]
            if stats is not None and stats.has_min_max and isinstance(stats.min_raw, int) \
                    and low <= stats.min_raw and stats.max_raw <= high:
                continue
            unproven.append(name)
        if unproven:
            table = parquet.read_row_group(group, columns=unproven)
            for name in unproven:
                column = table.column(name).combine_chunks()
                raw = column.view(pa.int32() if pa.types.is_date32(column.type) else pa.int64())
                low, high, per_second = bounds[name]
                outside = pc.fill_null(pc.or_(pc.less(raw, low), pc.greater(raw, high)), False)
                if pc.any(outside).as_py():
                    index = pc.index(outside, True).as_py()
                    seconds = raw[index].as_py() / per_second
                    year = int(1970 + seconds / 31_556_952)
                    return (offset + index + 1, name,
                            f"column {name} holds a {column.type} in year {year}: outside "
                            "0001-01-01 … 9999-12-31, the dates a Delta table and its readers "
                            "hold; re-write the file under the same name")
        offset += row_group.num_rows
    return None


def first_bad_row(rows: int, marker, keys: Sequence[Any], metadata: mirroring.TableMetadata):
    """Check `rows` rows from their marker and key columns (pyarrow arrays; `marker` None when
    the file has none, else an integer array). Returns `(rows, keyed, bad)`: the row count, how
    many rows are 1/2/4, and `(row_index, problem)` of the first bad row (0-based) or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    default = metadata.default_marker
    valid = pa.array(sorted(mirroring.VALID_MARKERS), pa.int64())
    keyed_markers = pa.array(sorted(int(m) for m in mirroring.KEYED_MARKERS), pa.int64())
    if marker is None:
        marker = pa.nulls(rows, pa.int64())
    raw = marker.cast(pa.int64())
    filled = pc.fill_null(raw, default)
    problems = []
    invalid = pc.invert(pc.is_in(filled, value_set=valid))
    if len(filled) and pc.any(invalid).as_py():
        index = pc.index(invalid, True).as_py()
        problems.append((index, INVALID_MARKER_TEXT[0] + str(raw[index].as_py())
                         + INVALID_MARKER_TEXT[1]))
    is_keyed = pc.fill_null(pc.is_in(filled, value_set=keyed_markers), False)
    keyed = int(pc.sum(is_keyed).as_py() or 0)
    if keyed and not metadata.keyed:
        index = pc.index(is_keyed, True).as_py()
        problems.append((index, KEYLESS_TEXT[0] + str(filled[index].as_py()) + KEYLESS_TEXT[1]))
    elif keyed and keys:
        null_key = pc.is_null(keys[0])
        for key in keys[1:]:
            null_key = pc.or_(null_key, pc.is_null(key))
        bad = pc.and_(is_keyed, null_key)
        if pc.any(bad).as_py():
            index = pc.index(bad, True).as_py()
            null = [name for name, key in zip(metadata.key_columns, keys) if not key[index].is_valid]
            problems.append((index, null_key_problem(null, filled[index].as_py())))
    return len(filled), keyed, (min(problems) if problems else None)
