"""A pure-Python reference model of open mirroring (DESIGN.md "Mirroring semantics", and Microsoft's
open-mirroring landing-zone specification).

Written from the specification, not from the engine: a mirrored table is a multiset of rows;
files are applied in order and rows in file order; `__rowMarker__` 0 appends, 1/4 replace every
row with the key (or append when there is none), 2 removes every row with the key. The tests
compare what the Spark engine leaves in Delta with what this model says, row for row.

The second half writes a model file into a landing zone (Parquet with pyarrow, or delimited
text), so that the tests and the model always talk about the very same bytes.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

MARKER = "__rowMarker__"
INSERT, UPDATE, DELETE, UPSERT = 0, 1, 2, 4
_REPLACING = (UPDATE, UPSERT)
_KEYED = (UPDATE, DELETE, UPSERT)


@dataclass(frozen=True)
class LandingFile:
    """One landing-zone data file as the model sees it.

    `columns` are in file order and may include `__rowMarker__` anywhere; `rows` hold values in
    that order. `types` (same length as `columns`) are logical type names ("int64", "int32",
    "string", "double", "bool") used for Parquet writing and type-change detection. `corrupt`
    says the file can't be read at all (zero bytes, not Parquet, …): the model fails the table
    at it without looking at its rows.
    """

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...] = ()
    types: tuple[str, ...] | None = None
    corrupt: str | None = None

    def type_of(self, column: str) -> str | None:
        if self.types is None:
            return None
        return self.types[self.columns.index(column)]


@dataclass(frozen=True)
class ModelError:
    """Why the model stopped a table: the file, the 1-based data row (if any) and a reason code."""

    file: str
    row: int | None
    reason: str  # Corrupt, BadMarker, KeylessChange, NullKey, MissingKeyColumn, TypeChange
    message: str = ""


class BadFile(Exception):
    """Raised inside the model when a file can't be applied."""

    def __init__(self, error: ModelError):
        super().__init__(f"{error.file} row {error.row}: {error.reason} {error.message}")
        self.error = error


def parse_marker(value: Any, default: int) -> int:
    """The seed's markers: 0/1/2/4 as int or numeric text; null (or empty text) → default."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise ValueError(f"marker {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"marker {value!r}")
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return default
        number = float(text)  # ValueError for non-numbers
        if not number.is_integer():
            raise ValueError(f"marker {value!r}")
        value = int(number)
    if value not in (INSERT, UPDATE, DELETE, UPSERT):
        raise ValueError(f"marker {value!r} is not 0, 1, 2 or 4")
    return int(value)


class ModelTable:
    """The state of one mirrored table: column union (first-seen order) and a list of rows."""

    def __init__(self, key_columns: Sequence[str] = (), upsert_default: bool = False):
        self.key_columns = tuple(key_columns)
        self.default_marker = UPSERT if upsert_default else INSERT
        self.columns: list[str] = []
        self.types: dict[str, str] = {}
        self.rows: list[dict[str, Any]] = []
        self.applied: list[str] = []
        self.error: ModelError | None = None

    # --- applying ---------------------------------------------------------------------------
    def apply(self, files: Iterable[LandingFile]) -> ModelError | None:
        """Apply files in order; stop at the first bad one (the files before it stay applied).

        Returns (and remembers in `error`) the error of the bad file, or None.
        """
        self.error = None
        for landing_file in files:
            try:
                self.apply_file(landing_file)
            except BadFile as exc:
                self.error = exc.error
                return exc.error
        return None

    def apply_file(self, f: LandingFile) -> None:
        """Apply one file atomically: validate all of it, then apply its rows in order."""
        changes = self._validate(f)
        for column in f.columns:
            if column != MARKER and column not in self.columns:
                self.columns.append(column)
                for row in self.rows:
                    row[column] = None
        if f.types is not None:
            for column, type_name in zip(f.columns, f.types):
                if column != MARKER:
                    self.types.setdefault(column, type_name)
        self.apply_changes(changes)
        self.applied.append(f.name)

    def apply_changes(self, changes: Iterable[tuple[int, Mapping[str, Any]]]) -> None:
        """Apply validated (marker, row) changes in order, over the current column union."""
        for marker, values in changes:
            row = {column: values.get(column) for column in self.columns}
            if marker == INSERT:
                self.rows.append(row)
                continue
            key = tuple(values[k] for k in self.key_columns)
            matching = [i for i, r in enumerate(self.rows) if self._key(r) == key]
            if marker == DELETE:
                self.rows = [r for i, r in enumerate(self.rows) if i not in set(matching)]
            elif matching:
                for i in matching:
                    self.rows[i] = dict(row)
            else:
                self.rows.append(row)

    def _validate(self, f: LandingFile) -> list[tuple[int, dict[str, Any]]]:
        def bad(row: int | None, reason: str, message: str) -> BadFile:
            return BadFile(ModelError(f.name, row, reason, message))

        if f.corrupt:
            raise bad(None, "Corrupt", f.corrupt)
        if f.types is not None:
            for column, type_name in zip(f.columns, f.types):
                known = self.types.get(column)
                if column != MARKER and known is not None and known != type_name:
                    raise bad(None, "TypeChange", f"{column}: {known} → {type_name}")
        if self.key_columns:
            missing = [k for k in self.key_columns if k not in f.columns]
            if missing:
                raise bad(None, "MissingKeyColumn", ", ".join(missing))
        has_marker = MARKER in f.columns
        changes = []
        for number, values in enumerate(f.rows, start=1):
            record = dict(zip(f.columns, values))
            raw = record.pop(MARKER, None) if has_marker else None
            try:
                marker = parse_marker(raw, self.default_marker)
            except ValueError as exc:
                raise bad(number, "BadMarker", str(exc)) from None
            if marker in _KEYED:
                if not self.key_columns:
                    raise bad(number, "KeylessChange", f"marker {marker} in a table without keys")
                if any(record.get(k) is None for k in self.key_columns):
                    raise bad(number, "NullKey", f"NULL key in a marker {marker} row")
            changes.append((marker, record))
        return changes

    def _key(self, row: Mapping[str, Any]) -> tuple | None:
        key = tuple(row.get(k) for k in self.key_columns)
        return None if any(v is None for v in key) else key  # NULL never equals anything

    # --- reading ----------------------------------------------------------------------------
    def multiset(self, columns: Sequence[str] | None = None) -> Counter:
        """The table as a multiset of tuples over `columns` (default: the column union)."""
        return as_multiset(columns or self.columns, self.rows)


def as_multiset(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Counter:
    """A multiset of value tuples over `columns`; absent values count as None."""
    return Counter(tuple(row.get(c) for c in columns) for row in rows)


def multiset_diff(expected: Counter, actual: Counter) -> str:
    """A readable description of how two multisets differ ('' when equal)."""
    missing = expected - actual
    extra = actual - expected
    lines = []
    for row, n in sorted(missing.items(), key=repr):
        lines.append(f"  missing x{n}: {row}")
    for row, n in sorted(extra.items(), key=repr):
        lines.append(f"  extra   x{n}: {row}")
    return "\n".join(lines)


# --- the DESIGN.md batch fold, as a second opinion ----------------------------------------------

def fold_batch(key_columns: Sequence[str], existing: list[dict], changes: list[tuple[int, dict]],
               columns: Sequence[str]) -> list[dict]:
    """Apply `changes` (marker, row) to `existing` with DESIGN.md's per-key fold table.

    Used only to check that the fold table is exact (equal to sequential application); rows are
    dicts over `columns`.
    """
    fates: dict[tuple, list] = {}  # key → [fate, set_row, insert_if_absent, appended]
    keyless_appends: list[dict] = []
    for marker, values in changes:
        row = {c: values.get(c) for c in columns}
        key = tuple(values.get(k) for k in key_columns)
        if marker == INSERT and (not key_columns or any(v is None for v in key)):
            keyless_appends.append(row)
            continue
        state = fates.setdefault(key, ["keep", None, False, []])
        fate, _set_row, insert_if_absent, appended = state
        if marker == INSERT:
            appended.append(row)
        elif marker == DELETE:
            state[:] = ["delete", None, False, []]
        elif fate == "delete":
            state[:] = ["delete", None, False, [row] * max(len(appended), 1)]
        else:
            if fate == "keep":
                insert_if_absent = len(appended) == 0
            state[:] = ["set", row, insert_if_absent, [row] * len(appended)]
    result = []
    present = set()
    for current in existing:
        key = tuple(current.get(k) for k in key_columns)
        if any(v is None for v in key) or key not in fates:
            result.append(dict(current))
            continue
        present.add(key)
        fate, set_row = fates[key][0], fates[key][1]
        if fate == "keep":
            result.append(dict(current))
        elif fate == "set":
            result.append(dict(set_row))
    for key, (fate, set_row, insert_if_absent, appended) in fates.items():
        if fate == "set" and insert_if_absent and key not in present:
            result.append(dict(set_row))
        result.extend(dict(r) for r in appended)
    return result + keyless_appends


# --- the change data feed of one pass ---------------------------------------------------------

FEED_INSERT, FEED_DELETE = "insert", "delete"
FEED_PRE, FEED_POST = "update_preimage", "update_postimage"


def feed_of_pass(key_columns: Sequence[str], before: list[dict], changes: list[tuple[int, dict]],
                 columns: Sequence[str]) -> Counter:
    """The change rows the one commit of a pass records (docs/change-data-feed.md), as a
    multiset of (change type, values over `columns`), from the rows before the pass and its
    changes (marker, row) in order. Written from the documented rule, per key:

    - the key's rows after the pass are those of the sequential model (`ModelTable`);
    - a key deleted in the pass: each row it had is a `delete`, each row it has an `insert`;
    - else a key updated or upserted: each row it had is an `update_preimage` with an
      `update_postimage` of the last update's row, and the rows added beside them `insert`s;
    - else (inserts only): each inserted row an `insert`;
    - a row inserted without a key (keyless table, NULL key) is an `insert`.
    """
    feed: Counter = Counter()

    def values(row: Mapping[str, Any]) -> tuple:
        return tuple(row.get(c) for c in columns)

    def key_of(row: Mapping[str, Any]) -> tuple | None:
        key = tuple(row.get(k) for k in key_columns)
        return None if not key_columns or any(v is None for v in key) else key

    by_key: dict[tuple, list[tuple[int, dict]]] = {}
    for marker, row in changes:
        key = key_of(row)
        if key is None:
            feed[(FEED_INSERT, values(row))] += 1
        else:
            by_key.setdefault(key, []).append((marker, row))
    for key, own in by_key.items():
        table = ModelTable(key_columns)
        table.columns = list(columns)
        old = [dict(r) for r in before if key_of(r) == key]
        table.rows = [dict(r) for r in old]
        table.apply_changes(own)
        new = table.rows
        markers = [m for m, _ in own]
        if DELETE in markers:
            feed.update((FEED_DELETE, values(r)) for r in old)
            feed.update((FEED_INSERT, values(r)) for r in new)
        elif any(m in _REPLACING for m in markers):
            last = [r for m, r in own if m in _REPLACING][-1]
            feed.update((FEED_PRE, values(r)) for r in old)
            feed[(FEED_POST, values(last))] += len(old)
            added = Counter(values(r) for r in new)
            added[values(last)] -= len(old)
            feed.update({(FEED_INSERT, v): n for v, n in added.items() if n > 0})
        else:
            feed.update((FEED_INSERT, values(r)) for r in new[len(old):])
    return feed


# --- writing model files into a landing zone -------------------------------------------------

_ARROW_TYPES = {"int64": "int64", "int32": "int32", "string": "string", "double": "float64",
                "bool": "bool_", "null": "null"}  # null: the Parquet Null logical type
_SCHEMA_TYPES = {"int64": "Int64", "int32": "Int32", "string": "String", "double": "Double",
                 "bool": "Boolean"}


def write_metadata(table_dir: str, key_columns: Sequence[str] = (), upsert_default: bool | None = None,
                   extra: Mapping[str, Any] | None = None) -> str:
    """Write a `_metadata.json` with keyColumns (and isUpsertDefaultRowMarker when given)."""
    os.makedirs(table_dir, exist_ok=True)
    doc: dict[str, Any] = {}
    if key_columns:
        doc["keyColumns"] = list(key_columns)
    if upsert_default is not None:
        doc["isUpsertDefaultRowMarker"] = upsert_default
    doc.update(extra or {})
    path = os.path.join(table_dir, "_metadata.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=2)
    return path


def csv_schema_definition(columns: Mapping[str, str]) -> dict[str, Any]:
    """A SchemaDefinition object for {column: logical type}."""
    return {"Columns": [{"Name": name, "DataType": _SCHEMA_TYPES[t], "IsNullable": True}
                        for name, t in columns.items()]}


def write_parquet(f: LandingFile, table_dir: str, compression: str = "snappy",
                  marker_as_text: bool = False) -> str:
    """Write `f` as Parquet under `table_dir` (marker column int32, or string if asked)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = []
    fields = []
    for index, column in enumerate(f.columns):
        values = [row[index] for row in f.rows]
        if column == MARKER:
            type_ = pa.string() if marker_as_text else pa.int32()
            if marker_as_text:
                values = [None if v is None else str(v) for v in values]
        else:
            type_name = f.type_of(column) or "string"
            type_ = getattr(pa, _ARROW_TYPES[type_name])()
        arrays.append(pa.array(values, type=type_))
        fields.append(pa.field(column, type_))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    path = os.path.join(table_dir, f.name)
    os.makedirs(table_dir, exist_ok=True)
    pq.write_table(table, path + ".tmp", compression=compression)
    os.replace(path + ".tmp", path)
    return path


def csv_text(f: LandingFile, separator: str = ",", quote: str = '"', escape: str = "\\",
             null_value: str = "", row_separator: str = "\r\n") -> str:
    """The delimited text of `f`: header row, then rows; values quoted when they need it."""

    def cell(value: Any) -> str:
        if value is None:
            return null_value
        text = str(value).lower() if isinstance(value, bool) else str(value)
        needs_quotes = any(ch in text for ch in (separator, "\r", "\n")) or (
            quote and quote in text) or text == null_value
        if needs_quotes and quote:
            if escape:
                text = text.replace(escape, escape + escape) if escape != quote else text
                text = text.replace(quote, escape + quote)
            return quote + text + quote
        return text

    lines = [separator.join(f.columns)]
    lines += [separator.join(cell(v) for v in row) for row in f.rows]
    return row_separator.join(lines) + row_separator


def write_csv(f: LandingFile, table_dir: str, encoding: str = "utf-8", **dialect: str) -> str:
    """Write `f` as delimited text under `table_dir` (dialect as in `csv_text`)."""
    os.makedirs(table_dir, exist_ok=True)
    path = os.path.join(table_dir, f.name)
    with open(path + ".tmp", "w", encoding=encoding, newline="") as handle:
        handle.write(csv_text(f, **dialect))
    os.replace(path + ".tmp", path)
    return path


def sequence_name(sequence: int, extension: str = "parquet") -> str:
    """`00000000000000000007.parquet` — written out here rather than imported, on purpose."""
    return "%020d.%s" % (sequence, extension)


# --- reading a mirrored table back ---------------------------------------------------------------

def read_delta(spark, path: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns (in table order) and rows of the Delta table at `path`, read with Spark."""
    frame = spark.read.format("delta").load(path)
    return list(frame.columns), [row.asDict() for row in frame.collect()]


def read_delta_rs(path: str) -> tuple[list[str], list[dict[str, Any]]]:
    """`read_delta` without Spark: delta-rs' QueryBuilder (it applies deletion vectors), values
    as Spark's UTC session shows them (naive UTC timestamps). Milliseconds against a Spark job
    per table: for tests that read many small tables."""
    from mirrorspec.readers.delta import preview_arrow
    from mirrorspec.readers.delta import _python_values

    data, _ = preview_arrow(path, limit=None)
    columns = list(data.column_names)
    values = [_python_values(data.column(c)) for c in columns]
    return columns, [dict(zip(columns, row)) for row in zip(*values)]


def landing_data_files(table_dir: str) -> list[str]:
    """Names of the data files left in a landing table folder (names starting with _ excluded)."""
    return sorted(n for n in os.listdir(table_dir)
                  if not n.startswith(("_", ".")) and os.path.isfile(os.path.join(table_dir, n)))


def processed_files(table_dir: str) -> list[str]:
    """Base names of every file under `table_dir/_ProcessedFiles` (any nesting)."""
    found = []
    for _root, _dirs, files in os.walk(os.path.join(table_dir, "_ProcessedFiles")):
        found.extend(files)
    return sorted(found)


__all__ = [
    "MARKER", "INSERT", "UPDATE", "DELETE", "UPSERT", "LandingFile", "ModelError", "BadFile",
    "ModelTable", "parse_marker", "as_multiset", "multiset_diff", "fold_batch", "feed_of_pass",
    "FEED_INSERT", "FEED_DELETE", "FEED_PRE", "FEED_POST", "write_metadata",
    "csv_schema_definition", "write_parquet", "csv_text", "write_csv", "sequence_name",
    "read_delta", "read_delta_rs", "landing_data_files", "processed_files",
]
