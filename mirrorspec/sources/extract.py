"""Plain extracts (`source: {type: csv}` / `{type: parquet}`): every new extract is a full snapshot.

The publisher lands only the change set between consecutive snapshots, like Lakeflow's
AUTO CDC FROM SNAPSHOT: inserts (0) of new keys, updates (1) of rows whose values changed, and
deletes (2) of keys the new snapshot no longer has. Unchanged rows produce nothing.

- A snapshot is one file directly under `source.path`, or one sub-folder of it (all its files,
  e.g. the `part-*.parquet` files a Spark job writes).
- Several new snapshots in one run are applied in order: by name (default) or by modification
  time (option `snapshot_order: modified`); each is compared with the one before it.
- The previous snapshot is the last extract this reader published (its files are remembered in
  the publisher state, `state["reader"]["snapshot"]`). It is read again from the feed, so a
  re-publish after a crash computes exactly the same change set. When it is gone (or on the first
  run) the current mirrored Delta table (`table.delta_path`) stands in; when that doesn't exist
  either, the first snapshot is all inserts.
- Tables need key columns; a snapshot with a NULL or duplicated key is an error, and so is an empty
  snapshot unless `allow_empty: true` (an empty extract would delete every row).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

from mirrorspec.base import delimited_text
from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import InferredColumn, InferredSchema, list_feed_files

STATE_SNAPSHOT = "snapshot"
EXTRACT_TYPES = ("csv", "parquet")  # the source types whose every file is a full snapshot


@dataclass(frozen=True)
class ExtractOptions:
    """`source.options` of a csv/parquet extract table, validated."""

    snapshot_order: str = "name"  # name | modified
    allow_empty: bool = False
    key_columns: tuple[str, ...] = ()
    decimal_handling: str = "double"  # parquet decimals (inference): double | string
    header: bool = True
    delimiter: str = ","
    quote: str = '"'
    escape: str = "\""  # RFC 4180: a quote inside quotes is doubled
    null_value: str = ""
    encoding: str = "UTF-8"
    timestamp_format: str | None = None
    date_format: str | None = None
    binary_encoding: str = "hex"  # hex | base64


def parse_options(options: dict[str, Any] | None, kind: str) -> ExtractOptions:
    """`source.options` of a `csv` or `parquet` source as ExtractOptions. The JSON Schema
    (`$defs/csv_options`, `$defs/parquet_options`) has checked names and values at validate
    time; `kind` is kept for callers."""
    options = dict(options or {})
    delimiter = str(options.get("delimiter", ","))
    keys = options.get("key_columns") or ()
    return ExtractOptions(
        snapshot_order=str(options.get("snapshot_order", "name")),
        allow_empty=bool(options.get("allow_empty", False)),
        key_columns=(keys,) if isinstance(keys, str) else tuple(str(k) for k in keys),
        decimal_handling=str(options.get("decimal_handling", "double")),
        header=bool(options.get("header", True)),
        delimiter="\t" if delimiter == "\\t" else delimiter,
        quote=str(options.get("quote", '"')),
        escape=str(options.get("escape", "\"")),
        null_value=str(options.get("null_value", "")),
        encoding=str(options.get("encoding", "UTF-8")),
        timestamp_format=options.get("timestamp_format"),
        date_format=options.get("date_format"),
        binary_encoding=str(options.get("binary_encoding", "hex")),
    )


# --- snapshots --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """One extract: a file, or a folder of files."""

    name: str  # the file, or the folder, as the feed spells it
    files: tuple[str, ...]


def feed_root(path: str) -> str:
    """The folder snapshots are named relative to: the folder itself, a file's parent, or the
    part of a glob before its first wildcard component."""
    plain = path[5:] if path.startswith("file:") else path
    if any(ch in plain for ch in "*?["):
        parts = plain.split("/")
        fixed = []
        for part in parts:
            if any(ch in part for ch in "*?["):
                break
            fixed.append(part)
        return "/".join(fixed) or "/"
    if os.path.isfile(plain):
        return os.path.dirname(plain)
    return plain


def group_snapshots(files: Sequence[str], root: str, order: str = "name") -> list[Snapshot]:
    """Group feed files into snapshots (top-level files, or top-level folders) and order them."""
    root_abs = os.path.abspath(root) if "://" not in root else root.rstrip("/")
    groups: dict[str, list[str]] = {}
    for file in files:
        full = os.path.abspath(file) if "://" not in file else file
        rel = os.path.relpath(full, root_abs) if "://" not in full else full[len(root_abs) + 1:]
        parts = rel.split("/")
        if len(parts) == 1 or rel.startswith(".."):
            name = file
        else:
            name = os.path.join(root, parts[0]) if "://" not in root else f"{root_abs}/{parts[0]}"
        groups.setdefault(name, []).append(file)
    snapshots = [Snapshot(name, tuple(sorted(members))) for name, members in groups.items()]

    def mtime(snapshot: Snapshot) -> float:
        try:
            return max(os.path.getmtime(f) for f in snapshot.files)
        except OSError:
            return 0.0

    if order == "modified":
        return sorted(snapshots, key=lambda s: (mtime(s), s.name))
    return sorted(snapshots, key=lambda s: s.name)


def previous_snapshot(state: dict[str, Any]) -> tuple[str, ...] | None:
    """The files of the last snapshot this table published, if the state remembers them."""
    reader_state = (state or {}).get("reader") or {}
    files = reader_state.get(STATE_SNAPSHOT)
    return tuple(files) if files else None


def _exists(file: str) -> bool:
    if "://" in file and not file.startswith("file:"):
        return True  # remote: assume present; reading it fails loudly otherwise
    return os.path.exists(file[5:] if file.startswith("file:") else file)


# --- where a bad value is (pure Python: the error path of the Spark reader) ---------------------

def expected_type(data_type: str, opts: ExtractOptions) -> str:
    """The type a CSV value must read as, with the option that says how: `Int32`,
    `DateTime (timestamp_format 'dd/MM/yyyy')`, `ByteArray (binary_encoding hex)`."""
    if data_type in ("DateTime", "ITime") and opts.timestamp_format:
        return f"{data_type} (timestamp_format {opts.timestamp_format!r})"
    if data_type == "IDate" and opts.date_format:
        return f"{data_type} (date_format {opts.date_format!r})"
    if data_type == "ByteArray":
        return f"{data_type} (binary_encoding {opts.binary_encoding})"
    return data_type


def csv_records(data: bytes, name: str, opts: ExtractOptions
                ) -> Iterator[tuple[int, list[str] | None]]:
    """(line, cells) of each data record of the CSV file `name` holding `data` (decompressed as
    its name says), as `delimited_text.data_record_lines` numbers them (the header and quoted
    line breaks counted). Nothing when the bytes can't be read as the options say."""
    import codecs
    import csv

    from mirrorspec.openmirroring import compression

    try:
        data = compression.decompress(data, name)
        codec = codecs.lookup(opts.encoding).name
        text = data.decode("utf-8-sig" if codec == "utf-8" else codec, errors="replace")
    except Exception:  # noqa: BLE001 - only a better message is lost: the error says the rest
        return
    escape = opts.escape if opts.escape and opts.escape != opts.quote else None
    dialect = {"delimiter": opts.delimiter, "quotechar": opts.quote or None,
               "escapechar": escape, "doublequote": bool(opts.quote) and escape is None,
               "quoting": csv.QUOTE_MINIMAL if opts.quote else csv.QUOTE_NONE}
    try:
        yield from delimited_text.data_record_lines(text, dialect, header=opts.header)
    except TypeError:  # a dialect Python's csv can't express
        return


def csv_value_line(data: bytes, name: str, opts: ExtractOptions, field: int,
                   value: str) -> int | None:
    """The line (1-based, the header counted) where the first record whose field `field`
    (0-based) is `value` starts, in the CSV file `name` holding `data`; None when no record
    has it or the bytes can't be read as the options say."""
    for line, cells in csv_records(data, name, opts):
        if cells is not None and field < len(cells) and cells[field] == value:
            return line
    return None


def csv_malformed_line(data: bytes, name: str, opts: ExtractOptions, fields: int) -> int | None:
    """The line where the first record that isn't `fields` fields (or can't be parsed at all)
    starts in the CSV file `name` holding `data`; None when there is none."""
    for line, cells in csv_records(data, name, opts):
        if cells is None or len(cells) != fields:
            return line
    return None


def csv_key_lines(data: bytes, name: str, opts: ExtractOptions, keys: Sequence[str],
                  columns: Sequence[str]) -> tuple[int | None, tuple[int, int] | None]:
    """Where the CSV file `name` holding `data` breaks the one-row-per-key rule, by its raw
    text: the line of the first record whose `keys` hold a NULL, and (first line, repeating
    line) of the first key text seen twice; None where there is none. The keys are found by
    the header (case-insensitive), or among `columns` in order for a file without one."""
    names = list(columns)
    if opts.header:
        header = next((cells for _line, cells in csv_records(data, name,
                                                             replace(opts, header=False))), None)
        names = list(header or ())
    lower = [n.strip().lower() for n in names]
    if any(k.lower() not in lower for k in keys):
        return None, None
    fields = [lower.index(k.lower()) for k in keys]
    null_line: int | None = None
    seen: dict[tuple[str, ...], int] = {}
    repeat = None
    for line, cells in csv_records(data, name, opts):
        if cells is None or max(fields, default=0) >= len(cells):
            continue
        key = tuple(cells[i] for i in fields)
        if null_line is None and any(k == opts.null_value or k == "" for k in key):
            null_line = line
        elif repeat is None and key in seen:
            repeat = (seen[key], line)
        seen.setdefault(key, line)
        if null_line is not None and repeat is not None:
            break
    return null_line, repeat


# --- formats (pure Python: options and inference) -----------------------------------------

class CsvExtractFormat:
    """`csv`: each new CSV extract (file or folder) is a full snapshot of the table."""

    type_name = "csv"

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """A CSV header names columns but not their types: the YAML declares them."""
        return None


class ParquetExtractFormat:
    """`parquet`: each new Parquet extract (file or folder of part files) is a full snapshot."""

    type_name = "parquet"

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns and types from the first extract's Parquet schema (pyarrow, no JVM)."""
        opts = parse_options(options, self.type_name)
        if "://" in path and not path.startswith("file:"):
            return None
        files = [f for f in list_feed_files(path) if f.lower().endswith(".parquet")]
        if not files:
            return None
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(files[0])
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
            raise SourceError(f"cannot read the Parquet schema: {exc}", file=files[0]) from None
        columns = tuple(InferredColumn(field.name, arrow_data_type(field.type,
                                                                   opts.decimal_handling),
                                       bool(field.nullable))
                        for field in schema)
        return InferredSchema(columns=columns, key_columns=opts.key_columns, origin=files[0])


def arrow_data_type(arrow_type: Any, decimal_handling: str = "double") -> str:
    """The SchemaDefinition DataType of a Parquet (Arrow) column type."""
    import pyarrow.types as t

    if t.is_int8(arrow_type) or t.is_int16(arrow_type) or t.is_uint8(arrow_type):
        return "Int16"
    if t.is_int32(arrow_type) or t.is_uint16(arrow_type):
        return "Int32"
    if t.is_integer(arrow_type):
        return "Int64"
    if t.is_float32(arrow_type) or t.is_float16(arrow_type):
        return "Single"
    if t.is_float64(arrow_type):
        return "Double"
    if t.is_decimal(arrow_type):
        return "Double" if decimal_handling == "double" else "String"
    if t.is_boolean(arrow_type):
        return "Boolean"
    if t.is_timestamp(arrow_type):
        return "DateTime"
    if t.is_date(arrow_type):
        return "IDate"
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or \
            t.is_fixed_size_binary(arrow_type):
        return "ByteArray"
    return "String"
