"""One delimited landing file linted: byte-order mark, header, encoding, dialect, then each row
as the engine's row check decides (marker, value types, NULL keys, keyless updates)."""

from __future__ import annotations

import csv
import io
import json
import re

from mirrorspec.base import delimited_text
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.landing import checks
from mirrorspec.landing.lint.columns import Column, marker_number, schema_stop
from mirrorspec.landing.lint.findings import Finding
from mirrorspec.openmirroring import mirroring


_SEPARATORS = mirroring.DELIMITED_PROPERTIES["ColumnSeparator"][1]


def lint_delimited(fs, file, metadata, union, report, where, stop, strict) -> Finding | None:
    """Lint one delimited file; returns the finding the engine would stop the table at."""
    options = metadata.delimited
    add = report.findings.append
    try:  # the whole file, decompressed as the engine reads it
        data = checks.read_start(fs, file, None)
    except LandingZoneError as exc:
        return stop("content/unreadable", exc.message)
    _check_bom(data, options, add, where)
    text = checks.decode(data, file, options)
    try:
        header = checks.parse_header(text, file, options)
    except LandingZoneError as exc:
        return stop("content/header", exc.message, line=exc.row)
    try:
        checks.check_encoding(fs, file, options)
    except LandingZoneError as exc:
        rule = "content/unreadable" if "compressed" in exc.message else "content/encoding"
        return stop(rule, exc.message, line=exc.row)  # check_encoding's row is a line
    _check_dialect(text, header, options, add, where)
    raw_header = next(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""),
                                 **checks.csv_dialect(options)))
    for cell in raw_header:
        if cell != cell.strip():
            add(Finding("content/header", "warning", f"header name {cell!r} has white space "
                        f"around it (read as {cell.strip()!r})", line=1, column=cell.strip(),
                        **where))
    markers = [i for i, n in enumerate(header) if checks.is_marker(n)]
    marker_last = not markers or markers[0] == len(header) - 1
    if not strict:
        for problem in mirroring.marker_column_problems(marker_last):
            add(Finding("content/marker-position", "warning", problem,
                        column=header[markers[0]], **where))
    declared = {c.name.lower(): c for c in metadata.columns}
    columns = [Column(n, mirroring.spark_type_for(declared[n.lower()].data_type)
                       if n.lower() in declared else "string")
               for n in header if not checks.is_marker(n)]
    found = schema_stop(columns, marker_last, metadata, union, stop, strict)
    if found is not None:
        return found
    notes: list[tuple[int, str]] = []
    bad = _first_bad_record(text, header, metadata, notes)
    for line, column in notes[:1]:
        add(Finding("content/delete-not-nullable", "warning", mirroring.delete_not_nullable(
            column), line=line, column=column, **where))
    if bad is not None:
        return stop("content/row", bad[1], line=bad[0], column=bad[2])
    return None


def _check_bom(data: bytes, options, add, where) -> None:
    encoding = checks.python_encoding(options.encoding).lower().replace("_", "-")
    if encoding in ("utf-8", "utf8", "ascii", "us-ascii", "cp1252", "latin1", "iso-8859-1") and \
            data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        add(Finding("metadata/dialect", "error", f"the file starts with a UTF-16 byte-order "
                    f"mark, but Encoding is {options.encoding!r}", **where))


def _check_dialect(text: str, header: list[str], options, add, where) -> None:
    first = text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    if len(header) == 1:
        for separator in _SEPARATORS:
            if separator != options.column_separator and separator in first:
                add(Finding("metadata/dialect", "error",
                            f"ColumnSeparator is {json.dumps(options.column_separator)}, but the "
                            f"header looks {json.dumps(separator)}-separated; set ColumnSeparator "
                            "in FileFormatTypeProperties", line=1, **where))
                break
    ending = re.search(r"\r\n|\n|\r", text)
    if ending and ending.group(0) != options.row_separator:
        add(Finding("metadata/dialect", "warning",
                    f"RowSeparator is {json.dumps(options.row_separator)}, but the file's rows "
                    f"end with {json.dumps(ending.group(0))}", line=1, **where))


def _first_bad_record(text: str, header: list[str], metadata, notes: list[tuple[int, str]]
                      ) -> tuple[int, str, str | None] | None:
    """The line (1-based, as an editor numbers it) of the first bad data row, its problem and
    column, as the engine's row check decides (malformed record, marker, value type, NULL key,
    keyless update). Adds to `notes` (line, column) of each delete row before it that leaves an
    `IsNullable: false` column empty (applied here; see `mirroring.delete_not_nullable`)."""
    options = metadata.delimited
    lower = [h.lower() for h in header]
    marker_at = next((i for i, n in enumerate(header) if checks.is_marker(n)), None)
    declared = {c.name.lower(): c for c in metadata.columns}
    key_names = [k for k in metadata.key_columns if k.lower() in lower]
    keys = [lower.index(k.lower()) for k in key_names]
    key_set = set(keys)
    default = metadata.default_marker
    keyed_markers = {int(m) for m in mirroring.KEYED_MARKERS}
    for number, cells in delimited_text.data_record_lines(text, checks.csv_dialect(options)):
        if cells is delimited_text.MALFORMED or len(cells) != len(header):
            return number, checks.MALFORMED_TEXT, None
        values = [None if _is_null(c, options.null_value) else c for c in cells]
        marker = default if marker_at is None else marker_number(values[marker_at], default)
        type_problems, value_problems = [], []
        for index, name in enumerate(header):
            column = declared.get(name.lower())
            if column is None or index == marker_at:
                continue
            value = values[index]
            if value is not None and not _castable(value, column.data_type):
                before, after = checks.value_type_parts(name, index + 1, column.data_type)
                problem = (before + value + after, name)
                (type_problems if index in key_set else value_problems).append(problem)
            if (value is None or (value == "" and column.data_type != "String")) \
                    and not column.nullable:
                value_problems.append((f"column {name} is NULL, but SchemaDefinition declares "
                                       "it IsNullable: false", name))
        if type_problems:
            return number, type_problems[0][0], type_problems[0][1]
        if marker is None:
            assert marker_at is not None  # a marker is parsed only where the column is
            raw = (values[marker_at] or "").strip()
            return (number, checks.INVALID_MARKER_TEXT[0] + raw + checks.INVALID_MARKER_TEXT[1],
                    header[marker_at])
        if value_problems and marker != int(mirroring.RowMarker.DELETE):
            return number, value_problems[0][0], value_problems[0][1]
        if marker == int(mirroring.RowMarker.DELETE):
            notes += [(number, name) for problem, name in value_problems
                      if problem.endswith("IsNullable: false") and name not in key_names]
        if marker in keyed_markers:
            if not metadata.keyed:
                return (number, checks.KEYLESS_TEXT[0] + str(marker) + checks.KEYLESS_TEXT[1],
                        header[marker_at] if marker_at is not None else None)
            null = [name for name, k in zip(key_names, keys)
                    if _key_null(values[k], declared.get(lower[k]))]
            if null:
                return number, checks.null_key_problem(null, marker), ", ".join(null)
    return None


def _is_null(cell: str, null_value: str) -> bool:
    return cell == null_value if null_value else cell == ""


def _key_null(value, column) -> bool:
    if value is None:
        return True
    return value == "" and column is not None and column.data_type != "String"


_INTEGER_RANGES = {"Int16": 15, "Int32": 31, "Int64": 63}
_BOOLEAN_TEXT = {"t", "true", "y", "yes", "1", "f", "false", "n", "no", "0"}
_DATE = r"\s*[+-]?\d{4,}(-\d{1,2}(-\d{1,2})?)?"
_TIMESTAMP = re.compile(_DATE + r"([ T]\d{1,2}(:\d{1,2}(:\d{1,2}(\.\d{0,9})?)?)?"
                        r"\s*(Z|[+-]\d{1,2}(:?\d{2})?|[A-Za-z/_]+)?)?\s*$")
_DATE_ONLY = re.compile(_DATE + r"([ T].*)?\s*$")


def _castable(text: str, data_type: str) -> bool:
    """Whether Spark's try_cast turns the cell into a value of its SchemaDefinition DataType
    (an empty cell of a non-String type is no value, never a problem)."""
    kind = mirroring.canonical_data_type(data_type)
    value = text.strip()
    if kind == "String" or text == "":
        return True
    if kind in _INTEGER_RANGES:
        if not re.fullmatch(r"[+-]?\d+", value):
            return False
        bits = _INTEGER_RANGES[kind]
        return -(2 ** bits) <= int(value) < 2 ** bits
    if kind in ("Double", "Single"):
        try:
            float(value.rstrip("dDfF"))
            return True
        except ValueError:
            return value.lower() in ("nan", "infinity", "-infinity", "+infinity", "inf", "-inf")
    if kind == "Boolean":
        return value.lower() in _BOOLEAN_TEXT
    if kind == "IDate":
        return bool(_DATE_ONLY.match(value))
    if kind == "ITime" and re.match(mirroring.TIME_ONLY_PATTERN, text):
        return True
    if kind in ("DateTime", "ITime"):
        return bool(_TIMESTAMP.match(value))
    return True
