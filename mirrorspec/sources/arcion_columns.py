"""Arcion CSV chunks parsed column by column with Arrow kernels (the Python worker's fast path).

`arcion._Parser` stays the definition of the format. This path takes a chunk only when it can
prove the parser would give the same rows without an error:
- every row is a realtime row (3x+3 fields) or every row is a snapshot row (x fields), as the
  layout allows, and the layout names each column once;
- every Exists value is exactly `0`..`3` and every opType exactly `I`, `U` or `D`;
- every cursor and operationcount is valid JSON, and every value converts.
Values convert with Arrow only where a pattern proves Arrow and Python agree (plain decimal
integers, plain decimal numbers, text); any other value converts with the Python converter.
When a proof fails, `parse_csv_chunk` returns None and the caller runs the Python parser, which
reports the exact file:line of the first problem.
"""

from __future__ import annotations

import csv
import re
from typing import Any, Callable, Sequence

from mirrorspec.sources.delivery import DELIVERY_COLUMN, FileCheck
from mirrorspec.sources.replicator_positions import ARCION_ORDER_FIELDS as ORDER_FIELDS
from mirrorspec.sources.replicator_positions import (UNPOSITIONED, arcion_delivery,
                                                     arcion_position, clean_chunk_deliveries,
                                                     marks_of)
from mirrorspec.sources.arrow_columns import DECIMAL, INTEGER, all_match, all_of, any_of
from mirrorspec.sources.base import (ERROR_COLUMN, OP_COLUMN, OP_DELETE, OP_INSERT, OP_UPDATE,
                                     ORDER_COLUMN, PAIR_COLUMN, PRESENT_COLUMN, SOURCE_FILE_COLUMN,
                                     SOURCE_LINE_COLUMN, value_converter)

_INT_BITS = {"int16": 16, "int32": 32, "int64": 64}
_FLOAT_BITS = {"double": 64, "single": 32}


class _NotProved(Exception):
    """The chunk needs the Python parser (it reports the problem, if there is one)."""


def parse_csv_chunk(task: dict, ctx: dict, raw: bytes) -> dict[str, Any] | None:
    """The change columns (Arrow arrays) of one CSV chunk (its bytes, already checked to be
    UTF-8), or None when the chunk needs the Python parser."""
    layout = task["layout"]
    columns = list(layout["columns"])
    names = [n for n, _ in ctx["columns"]]
    if not columns or len(set(columns)) != len(columns) or not set(columns) <= set(names):
        return None
    x = len(columns)
    fields = _read(raw, task["delimiter"], layout["header"] and task["start"] == 0, 3 * x + 3)
    if not fields:
        return None
    width = len(fields)
    lines = _lines(task, fields[0], layout["header"] and task["start"] == 0)
    try:
        if width == 3 * x + 3 and layout["realtime"] is not False:
            return _Chunk(task, ctx, fields, lines).realtime(columns)
        order = list(layout.get("snapshot_columns") or columns)[:x]
        if width == x and layout["realtime"] is not True and len(set(order)) == len(order):
            return _Chunk(task, ctx, fields, lines).snapshot(order)
    except _NotProved:
        return None
    return None


def _grammar(delimiter: str) -> re.Pattern[bytes]:
    """RFC 4180 records on which Python's strict `csv` reader and Arrow's CSV reader agree:
    a quoted field is closed and followed by the delimiter or a line end (Arrow would read
    `"b"c` as `bc` where Python reports an error); lines end in LF or CRLF."""
    d = re.escape(delimiter.encode())
    field = rb'(?:"[^"]*+(?:""[^"]*+)*+"|[^"' + d + rb'\r\n][^' + d + rb'\r\n]*+|)'
    return re.compile(rb'(?:' + field + rb'(?:' + d + field + rb')*+(?:\r?\n|\Z))*+')


def _read(raw: bytes, delimiter: str, skip_header: bool, widest: int) -> list | None:
    """The chunk's fields (one string array per position) as `arcion._Parser._csv` would
    read them, or None unless that is proved: the grammar holds, every line is one row (no
    blank lines, no line breaks inside values), no NUL (rare enough to leave to Python) and no
    field reaches Python's size limit."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    raw = raw.removeprefix(b"\xef\xbb\xbf")  # as the parser's utf-8-sig decoding does
    if delimiter in '"\r\n\x00' or not raw.strip() or b"\x00" in raw \
            or not _grammar(delimiter).fullmatch(raw):
        return None
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    try:
        table = pcsv.read_csv(
            pa.py_buffer(raw),
            read_options=pcsv.ReadOptions(use_threads=False, autogenerate_column_names=True,
                                          block_size=max(1 << 20, len(raw) + 1)),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char='"',
                                            double_quote=True, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={f"f{i}": pa.string() for i in range(widest)},
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, ValueError):
        return None
    if table.num_rows != lines or table.num_rows == (1 if skip_header else 0) \
            or table.num_columns < 2:  # Python skips a row that is one blank field
        return None
    fields = [column.combine_chunks()[1 if skip_header else 0:] for column in table.columns]
    limit = csv.field_size_limit()
    if any(not pa.types.is_string(f.type) or (pc.max(pc.utf8_length(f)).as_py() or 0) >= limit
           for f in fields):
        return None
    return fields


def _lines(task: dict, first, header: bool):
    """The line each row starts on (every line holds one row: `_read` proved it)."""
    import pyarrow as pa

    start = task["first_line"] + (1 if header else 0)
    return pa.array(range(start, start + len(first)), pa.int64())


class _Chunk:
    def __init__(self, task: dict, ctx: dict, fields: list, lines):
        import pyarrow as pa
        import pyarrow.compute as pc

        self.pa, self.pc = pa, pc
        self.task, self.fields = task, fields
        self.path = task["file"]
        self.names = [n for n, _ in ctx["columns"]]
        self.types = {n: (t or "String") for n, t in ctx["columns"]}
        self.keys = list(ctx["keys"])
        self.nulls = pa.array(list(ctx["null_values"]), pa.string())
        self.snapshot_op = ctx.get("snapshot_op", OP_INSERT)
        binary = ctx.get("binary", "hex")
        self.converters = {n: value_converter(t, binary) for n, t in ctx["columns"]}
        self.lines = lines
        self.n = len(lines)
        self.check = FileCheck(marks_of(ctx.get("marks")), bool(self.keys), True, self.path,
                               repeats_land=bool(ctx.get("repeats_land")))
        self.phase, self.positions, self.deliveries = 0, None, None  # set by `realtime`

    # one column ------------------------------------------------------------------------------
    def text(self, position: int):
        return self.fields[position]

    def value(self, name: str, texts, wanted):
        """`texts` converted to the column's type where `wanted` and not a null marker; NULL
        elsewhere."""
        pa, pc = self.pa, self.pc
        wanted = pc.and_(wanted, pc.invert(pc.is_in(texts, value_set=self.nulls)))
        values = pc.if_else(wanted, texts, pa.scalar(None, pa.string()))
        kind = self.types[name].lower()
        if kind == "string":
            return values
        present = self.n - values.null_count
        if kind in _INT_BITS and all_match(pc, values, INTEGER, present):
            numbers = pc.cast(values, pa.int64())
            bits = _INT_BITS[kind]
            bounds = pc.min_max(numbers)
            if present and (bounds["min"].as_py() < -(1 << (bits - 1))
                            or bounds["max"].as_py() >= 1 << (bits - 1)):
                raise _NotProved
            return pc.cast(numbers, getattr(pa, f"int{bits}")())
        if kind in _FLOAT_BITS and all_match(pc, values, DECIMAL, present):
            numbers = pc.cast(values, pa.float64())
            return numbers if _FLOAT_BITS[kind] == 64 else pc.cast(numbers, pa.float32(), safe=False)
        return self._python_values(values.to_pylist(), self.converters[name], kind)

    def _python_values(self, texts: list, convert: Callable, kind: str):
        pa = self.pa
        try:
            converted = [None if t is None else convert(t) for t in texts]
        except ValueError:
            raise _NotProved from None
        if kind in _INT_BITS:
            return pa.array(converted, getattr(pa, f"int{_INT_BITS[kind]}")())
        if kind in _FLOAT_BITS:
            return pa.array(converted, pa.float64() if _FLOAT_BITS[kind] == 64 else pa.float32())
        return pa.array(converted)

    # rows -----------------------------------------------------------------------------------
    def realtime(self, columns: list[str]) -> dict[str, Any]:
        pa, pc = self.pa, self.pc
        x = len(columns)
        ops = self.text(3 * x)
        if not _all_in(pc, ops, ("I", "U", "D")):
            raise _NotProved
        self._check_json(3 * x + 1)
        self._check_json(3 * x + 2)
        self._deliveries(self.text(3 * x + 1).to_pylist())
        is_update, is_delete = pc.equal(ops, "U"), pc.equal(ops, "D")
        new_bit, old_bit, new, old = {}, {}, {}, {}
        for i, name in enumerate(columns):
            exists = self.text(3 * i + 2)
            if not _all_in(pc, exists, ("0", "1", "2", "3")):
                raise _NotProved
            new_bit[name] = pc.is_in(exists, value_set=pa.array(["1", "3"]))
            old_bit[name] = pc.is_in(exists, value_set=pa.array(["2", "3"]))
            new[name], old[name] = _same_type(pa, self.value(name, self.text(3 * i), new_bit[name]),
                                              self.value(name, self.text(3 * i + 1), old_bit[name]))
        falses = pa.array([False] * self.n)
        keys_known = bool(self.keys) and all(k in new for k in self.keys)
        old_keys = all_of(pc, [old_bit[k] for k in self.keys]) if keys_known else falses
        key_change = falses
        if keys_known:
            differs = any_of(pc, [_differ(pc, new[k], old[k]) for k in self.keys])
            key_change = all_of(pc, [is_update, old_keys, differs]
                                 + [new_bit[k] for k in self.keys])
        no_new = pc.invert(any_of(pc, list(new_bit.values())))
        delete_old = pc.and_(is_delete, pc.or_(old_keys, no_new))
        values, kc_insert, in_row, in_kc_insert = {}, {}, {}, {}
        for name in columns:
            key_from_old = falses
            if name in self.keys:
                key_from_old = pc.and_(is_update, pc.and_(pc.invert(new_bit[name]), old_bit[name]))
            values[name] = pc.if_else(pc.or_(key_from_old, delete_old), old[name], new[name])
            kc_insert[name] = pc.if_else(new_bit[name], new[name], old[name])
            in_row[name] = pc.or_(new_bit[name], key_from_old)
            in_kc_insert[name] = pc.or_(new_bit[name], old_bit[name])
        op = pc.cast(pc.if_else(is_delete, OP_DELETE, pc.if_else(is_update, OP_UPDATE, OP_INSERT)),
                     pa.int32())
        present = pc.if_else(is_delete, pa.scalar(None, pa.list_(pa.string())),
                             self._present(columns, in_row))
        keep = pc.invert(key_change)
        main = self._rows(values, op, present, 0, None, keep)
        if not pc.any(key_change).as_py():
            return main
        pair = pc.binary_join_element_wise(self.path, ":", pc.cast(self.lines, pa.string()), "")
        deleted = self._rows(old, pa.array([OP_DELETE] * self.n, pa.int32()),
                             pa.nulls(self.n, pa.list_(pa.string())), 0, pair, key_change)
        inserted = self._rows(kc_insert, pa.array([OP_INSERT] * self.n, pa.int32()),
                              self._present(columns, in_kc_insert), 1, pair, key_change)
        return {name: (main[name] + deleted[name] + inserted[name]) if name == DELIVERY_COLUMN
                else pa.concat_arrays([main[name], deleted[name], inserted[name]])
                for name in main}

    def snapshot(self, order: list[str]) -> dict[str, Any]:
        pa = self.pa
        trues = pa.array([True] * self.n)
        values = {name: self.value(name, self.text(i), trues)
                  for i, name in enumerate(order) if name in self.types}
        present = None if len(values) == len(self.names) else sorted(values)
        return self._rows(values, pa.array([self.snapshot_op] * self.n, pa.int32()),
                          pa.array([present] * self.n, pa.list_(pa.string())), 0, None, None)

    def _check_json(self, position: int) -> None:
        from mirrorspec.sources.base import loads_line

        try:
            for text in self.pc.unique(self.fields[position]).to_pylist():
                if text and not text.isspace():
                    loads_line(text)
        except ValueError:
            raise _NotProved from None

    def _present(self, columns: Sequence[str], in_row: dict[str, Any]):
        """Each row's `_present`: the sorted names in it, or NULL when it holds every column."""
        pa, pc = self.pa, self.pc
        flags = [pc.if_else(in_row[name], "1", "0") for name in columns]
        patterns = pc.binary_join_element_wise(*flags, "").dictionary_encode()
        lists = []
        for pattern in patterns.dictionary.to_pylist():
            chosen = sorted(name for name, flag in zip(columns, pattern) if flag == "1")
            lists.append(None if len(chosen) >= len(self.names) else chosen)
        return pa.array(lists, pa.list_(pa.string())).take(patterns.indices)

    def _rows(self, values: dict, op, present, sub: int, pair, where) -> dict[str, Any]:
        """The change columns of the rows `where` selects (all when None)."""
        pa = self.pa
        n = self.n
        positions = self.positions or [UNPOSITIONED] * n
        order = pa.StructArray.from_arrays(
            [pa.array([self.phase] * n, pa.int32()),
             *[pa.array([p[i] for p in positions], pa.int64()) for i in range(3)],
             pa.array([self.task["rank"]] * n, pa.int32()), self.lines,
             pa.array([sub] * n, pa.int32())], names=[f for f, _ in ORDER_FIELDS])
        deliveries = self.deliveries or [arcion_delivery(None, self.path, True).value()] * n
        out = {name: values.get(name, pa.nulls(n)) for name in self.names}
        out.update({OP_COLUMN: op, ORDER_COLUMN: order, PRESENT_COLUMN: present,
                    SOURCE_FILE_COLUMN: pa.array([self.path] * n, pa.string()),
                    SOURCE_LINE_COLUMN: self.lines,
                    PAIR_COLUMN: pa.nulls(n, pa.string()) if pair is None else pair,
                    ERROR_COLUMN: pa.nulls(n, pa.string()), DELIVERY_COLUMN: deliveries})
        if where is None:
            return out
        chosen = where.to_pylist()
        return {name: [v for v, keep in zip(column, chosen) if keep]
                if isinstance(column, list) else column.filter(where)
                for name, column in out.items()}

    def _deliveries(self, cursors: list) -> None:
        """Each realtime row's cursor position (for `_order`) and `_delivery`; _NotProved when
        the chunk may hold a re-send (the Python parser checks it change by change)."""
        positions = [arcion_position(c) for c in cursors]
        deliveries = [arcion_delivery(p, self.path, False) for p in positions]
        values = clean_chunk_deliveries(deliveries, self.check, bool(self.keys))
        if values is None:
            raise _NotProved
        previous = UNPOSITIONED  # a change without a cursor position sorts where its file puts it
        for index, position in enumerate(positions):
            positions[index] = previous = position or previous
        self.phase, self.positions, self.deliveries = 1, positions, values


def _all_in(pc, texts, allowed: tuple[str, ...]) -> bool:
    import pyarrow as pa

    return bool(pc.all(pc.is_in(texts, value_set=pa.array(list(allowed)))).as_py())


def _same_type(pa, a, b):
    if a.type == b.type:
        return a, b
    if pa.types.is_null(a.type):
        return a.cast(b.type), b
    if pa.types.is_null(b.type):
        return a, b.cast(a.type)
    raise _NotProved


def _differ(pc, a, b):
    """Python's `a != b` of two converted columns of one type (NULL is None: equal only to
    NULL)."""
    both = pc.and_(pc.is_valid(a), pc.is_valid(b))
    unequal = pc.fill_null(pc.not_equal(a, b), False)
    return pc.or_(pc.and_(both, unequal), pc.xor(pc.is_null(a), pc.is_null(b)))


__all__ = ["parse_csv_chunk"]
