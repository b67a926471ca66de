"""Qlik Replicate line-per-message chunks parsed column by column with Arrow (the Python worker's
fast path).

`qlik_messages.parse_into` stays the definition of the format. This path reads a chunk with
`pyarrow.json` and an explicit schema: the message's parts, and each table column with the JSON
kind its values have (string, number or boolean; the kinds of the chunk's first messages, and a
column that turns out to hold another kind is read again with that kind). The rows are then
worked out with Arrow kernels. A chunk is taken only when the proof holds that the row parser
would give the same rows without an error:
- the chunk is UTF-8, and every non-blank line holds exactly one JSON object: each such line
  starts with `{` and ends with `}` (so no object spans lines), and Arrow reads as many objects
  as there are non-blank lines. Row i is then on the i-th non-blank line. A byte-order mark
  may only start the file, and no line nests deeper than Python's json can recurse;
- Arrow's kinds are strict (a string is never read as a number; a key given twice, a value of
  another kind, lone surrogates and numbers beyond the type's range are errors), so every
  value's Python type is known. A number in a Double/Single column is read as a double, in any
  other column as an int64: what orjson gives, except `-0`, which is refused. Arrow also reads
  `-NaN`, `Inf` and `-Inf`, which Python's json refuses: a line holding one is refused;
- every message is classified as the row parser does. Arrow can't tell an absent key from a
  null one, so where that matters (a bare message whose line may hold `"magic": null`, a
  message without columnMask whose data has nulls, an UPDATE whose beforeData lacks a key, a
  DELETE whose beforeData is all nulls) the message is left to the row parser, as is a
  key-changing UPDATE;
- every operation is REFRESH, INSERT, UPDATE or DELETE, every columnMask is hexadecimal, and
  every value converts.
Values convert with Arrow only where a pattern proves Arrow and Python agree (integers, plain
decimal numbers, `YYYY-MM-DD[ T]HH:MM:SS[.ffffff]` date-times, `YYYY-MM-DD` dates, text); any
other value converts with the Python converter, once per distinct value. Headers that take few
values (operation, columnMask, transactionLastEvent, the table filter) go through the row
parser's own functions, once per distinct value.

The messages left to the row parser are parsed by it alone: the chunk with every other line
blanked, so their lines, order, masks and pairs are the ones it would give in the whole chunk.
When a proof fails, or the row parser reports an error, `parse_lines_chunk` returns None and
the caller runs the row parser on the whole chunk, which reports the exact file:line of the
first problem.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from mirrorspec.sources import qlik_messages as qlik
from mirrorspec.sources.arrow_columns import DECIMAL, INTEGER, all_match, all_of, any_of
from mirrorspec.sources.base import (ERROR_COLUMN, OP_COLUMN, OP_DELETE, OP_INSERT, OP_UPDATE,
                                     ORDER_COLUMN, PAIR_COLUMN, PRESENT_COLUMN, SOURCE_FILE_COLUMN,
                                     SOURCE_LINE_COLUMN, loads_line, value_converter)

_BOM = b"\xef\xbb\xbf"
_KIND_CHANGE = re.compile(r"Column\((/[^)]*)\) changed from (\w+) to (\w+)")
# Text Arrow's cast parses exactly as Python's fromisoformat does (a property test checks it):
# years 1-9999 (Arrow takes year 0, Python refuses it); where Arrow refuses (Feb 30, hour 24),
# Python converts or reports the value.
_YEAR = r"^(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_DATETIME = _YEAR + r"-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$"
_DATE = _YEAR + r"-[0-9]{2}-[0-9]{2}$"
# Arrow's reader takes `-NaN`, `Inf` and `-Inf` as numbers (anywhere, ignored fields too);
# Python's json only NaN, Infinity and -Infinity (which read the same on both sides)
_NON_FINITE = r"[:,\[][ \t\r]*(-NaN|-?Inf)[ \t\r]*([,}\]]|$)"
_NOT_TOKEN = bytes(b for b in range(256) if b not in b"Inf-Na")
_INT_BITS = {"int16": 16, "int32": 32, "int64": 64}
_FLOATS = ("double", "single")
_PARTS = ("data", "beforeData")
# header → the JSON kinds it may have here (others: the row parser)
_HEADER_KINDS = {"operation": ("string",), "changeSequence": ("string", "number"),
                 "transactionId": ("string",), "columnMask": ("string",),
                 "transactionLastEvent": ("boolean", "string", "number")}
_VALUE_KINDS = ("string", "number", "boolean")
_SAMPLE_LINES = 64
_NESTING = 512  # `{` and `[` in one line at most (Python's json recurses; Arrow does not)
_READS = 6  # reads of one chunk at most (each new kind met is one more)


class _NotProved(Exception):
    """The chunk needs the row parser (it reports the problem, if there is one)."""


def parse_lines_chunk(task: dict, ctx: dict, raw: bytes) -> dict[str, Any] | None:
    """The change columns (Arrow arrays) of one line-per-message chunk (its bytes, decompressed),
    or None when the chunk needs the row parser."""
    import pyarrow as pa

    names = [n for n, _ in ctx["columns"]]
    if task.get("mode") != "lines" or not names or len(set(names)) != len(names) \
            or not set(ctx["keys"]) <= set(names):
        return None
    try:
        return _Chunk(task, ctx, raw).parse()
    except (_NotProved, pa.ArrowException):  # Arrow refusing a value: the row parser reads it
        return None


class _Chunk:
    def __init__(self, task: dict, ctx: dict, raw: bytes):
        import pyarrow as pa
        import pyarrow.compute as pc

        self.pa, self.pc = pa, pc
        self.task, self.ctx = task, ctx
        self.path = task["file"]
        self.names = [n for n, _ in ctx["columns"]]
        self.all = frozenset(self.names)
        self.types = {n: (t or "String").lower() for n, t in ctx["columns"]}
        self.keys = list(ctx["keys"])
        binary = ctx.get("binary", "hex")
        self.converters = {n: value_converter(t, binary) for n, t in ctx["columns"]}
        self.table_filter = ctx.get("table")
        self.bare = False  # whether the chunk's first lines hold bare messages (no envelope)
        self.seen: set[tuple] = set()  # fields whose kind the first lines show
        self.kinds: dict[tuple, str] = {}
        self.raw = raw
        buffer = pa.py_buffer(raw)
        if raw.startswith(_BOM) and task.get("start", 0) != 0:
            raise _NotProved  # a mark mid-file: the row parser decides
        # the file's byte-order mark: the row parser drops it
        self.buffer = buffer.slice(3) if raw.startswith(_BOM) else buffer

    # lines ------------------------------------------------------------------------------------
    def _lines(self) -> None:
        """The chunk's lines, and the line of each object Arrow will read (proved below: one
        object per non-blank line)."""
        pa, pc = self.pa, self.pc
        offsets = pa.array([0, self.buffer.size], pa.int64()).buffers()[1]
        whole = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, self.buffer])
        try:
            whole.validate(full=True)  # UTF-8, as orjson and json.loads require
        except pa.ArrowInvalid:
            raise _NotProved from None
        self.all_lines = pc.split_pattern(whole, "\n").flatten()
        trimmed = pc.ascii_trim(self.all_lines, " \t\r")
        self.nonblank = pc.greater(pc.binary_length(trimmed), 0)
        blank = len(trimmed) - (pc.sum(self.nonblank).as_py() or 0)
        if blank == 0 or (blank == 1 and not self.nonblank[-1].as_py()):
            self.texts = trimmed.slice(0, len(trimmed) - blank)  # no copy (the last newline)
        else:
            self.texts = trimmed.filter(self.nonblank)
        self.n = len(self.texts)
        if self.n and not (pc.all(pc.starts_with(self.texts, "{")).as_py()
                           and pc.all(pc.ends_with(self.texts, "}")).as_py()):
            raise _NotProved
        letters = self.raw.translate(None, _NOT_TOKEN)  # a cheap pass; then only if it may
        if (b"Inf" in letters or b"-NaN" in letters) and self._any(
                pc.match_substring_regex(self.texts, _NON_FINITE)):
            raise _NotProved  # Arrow reads these; Python's json reports an error
        if self.n and pc.max(pc.binary_length(self.texts)).as_py() > 2 * _NESTING:
            long = self.texts.filter(pc.greater(pc.binary_length(self.texts), 2 * _NESTING))
            nesting = pc.add(pc.count_substring(long, "{"), pc.count_substring(long, "["))
            if pc.max(nesting).as_py() > _NESTING:
                raise _NotProved  # deep enough for Python's json to raise RecursionError
        self.positions = pc.cast(pc.indices_nonzero(self.nonblank), pa.int64())
        self.lines = pc.add(self.positions, self.task["first_line"])

    # reading ----------------------------------------------------------------------------------
    def _sample(self) -> None:
        """From the chunk's first messages (orjson): the JSON kind of every field the schema
        reads (the first one met, else the column type's usual one), whether bare messages
        occur, and whether most messages would need the row parser anyway (then it reads the
        chunk at once, without Arrow's read first)."""
        kinds: dict[tuple, str] = {}
        for part in _PARTS:
            for name in self.names:
                kind = self.types[name]
                kinds[(part, name)] = ("number" if kind in _INT_BITS or kind in _FLOATS else
                                       "boolean" if kind == "boolean" else "string")
        for header, allowed in _HEADER_KINDS.items():
            kinds[("headers", header)] = allowed[0]
        kinds[("table",)] = "string"
        messages = unsettled = 0
        for text in _first_lines(self.raw, len(self.raw) - self.buffer.size, _SAMPLE_LINES):
            try:
                doc = loads_line(text)
            except ValueError:
                continue
            if not isinstance(doc, dict):
                continue
            if not ("magic" in doc or ("type" in doc and "message" in doc)):
                self.bare = True
            message = doc.get("message") if isinstance(doc.get("message"), dict) else doc
            fields: list[tuple[tuple, Any]] = [(("table",), message.get("table"))]
            for part in _PARTS + ("headers",):
                values = message.get(part)
                if isinstance(values, dict):
                    fields += [((part, k), v) for k, v in values.items()]
            for field, value in fields:
                kind = _kind_of(value)
                allowed = _HEADER_KINDS.get(field[-1], ()) if field[0] == "headers" \
                    else _VALUE_KINDS
                if field in kinds and field not in self.seen and kind in allowed:
                    self.seen.add(field)
                    kinds[field] = kind
            if isinstance(message.get("headers"), dict):
                messages += 1
                unsettled += self._unsettled(message)
        if messages >= 8 and 2 * unsettled > messages:
            raise _NotProved  # e.g. no columnMask and nulls in data: absent or NULL?
        self.kinds = kinds

    def _unsettled(self, message: dict) -> bool:
        """Whether `parse` would leave this (data) message to the row parser: the rules it
        applies to Arrow's columns, on the parsed message."""
        headers = message["headers"]
        operation = str(headers.get("operation") or "").upper()
        data, before = message.get("data"), message.get("beforeData")
        if not isinstance(data, dict) or (before is not None and not isinstance(before, dict)):
            return False
        if operation == "DELETE":  # beforeData all nulls: `{}` or `{"ID": null}`?
            return isinstance(before, dict) and all(before.get(n) is None for n in self.names) \
                and any(data.get(n) is not None for n in self.names)
        if operation not in ("INSERT", "REFRESH", "UPDATE"):
            return False
        if not headers.get("columnMask") and any(data.get(n) is None for n in self.names):
            return True
        return operation == "UPDATE" and isinstance(before, dict) and bool(self.keys) and any(
            before.get(k) is None or data.get(k) is None or before[k] != data[k]
            for k in self.keys)

    def _type(self, field: tuple, kind: str):
        pa = self.pa
        if kind == "string":
            return pa.string()
        if kind == "boolean":
            return pa.bool_()
        if field[0] in _PARTS and self.types[field[1]] in _FLOATS:
            return pa.float64()
        return pa.int64()

    def _schema(self, kinds: dict[tuple, str]):
        pa = self.pa

        def record(part: str):
            return pa.struct([(n, self._type((part, n), kinds[(part, n)])) for n in self.names])

        headers = pa.struct([(h, self._type(("headers", h), kinds[("headers", h)]))
                             for h in _HEADER_KINDS])
        parts = [("data", record("data")), ("beforeData", record("beforeData")),
                 ("headers", headers)]
        if self.table_filter:
            parts.append(("table", self._type(("table",), kinds[("table",)])))
        fields = [("magic", pa.string()), ("type", pa.string()), ("message", pa.struct(parts))]
        if self.bare:  # absent fields cost too: bare messages' only when the chunk has them
            fields += [("tableStructure", pa.struct([])), ("lineage", pa.struct([]))] + parts
        return pa.schema(fields)

    def _field(self, path: str) -> tuple | None:
        """The schema field an Arrow error names (`/message/data/ID` → ('data', 'ID'))."""
        parts = path.split("/")[1:]
        if parts[:1] == ["message"]:
            parts = parts[1:]
        if len(parts) == 2 and parts[0] in _PARTS and parts[1] in self.all:
            return (parts[0], parts[1])
        if len(parts) == 2 and parts[0] == "headers" and parts[1] in _HEADER_KINDS:
            return ("headers", parts[1])
        if parts == ["table"] and self.table_filter:
            return ("table",)
        return None

    def _read(self):
        """Arrow's table of the chunk; a field of another kind than expected is read again with
        that kind (a field holding two kinds, or one the schema can't hold: the row parser)."""
        import pyarrow.json as pj

        pa = self.pa
        kinds = dict(self.kinds)
        changed: set[tuple] = set()
        read_options = pj.ReadOptions(use_threads=False,
                                      block_size=max(1 << 20, self.buffer.size + 1))
        for _ in range(_READS):
            options = pj.ParseOptions(explicit_schema=self._schema(kinds),
                                      unexpected_field_behavior="ignore")
            try:
                return pj.read_json(self.buffer, read_options=read_options, parse_options=options)
            except (pa.ArrowInvalid, ValueError) as exc:
                found = _KIND_CHANGE.search(str(exc))
                field = self._field(found.group(1)) if found else None
                if field is None or field in changed or field in self.seen:
                    raise _NotProved from None  # two kinds in one field: the row parser
                allowed = _HEADER_KINDS[field[1]] if field[0] == "headers" else _VALUE_KINDS
                if found.group(3) not in allowed:
                    raise _NotProved from None
                changed.add(field)
                kinds[field] = found.group(3)
        raise _NotProved

    # helpers ----------------------------------------------------------------------------------
    def _each(self, values, function: Callable[[Any], Any], out_type):
        """`function` of every value (NULL as None), called once per distinct value."""
        pa, pc = self.pa, self.pc
        encoded = pc.dictionary_encode(values)
        try:
            mapped = [function(v) for v in encoded.dictionary.to_pylist()]
            of_null = function(None)
        except (ValueError, TypeError):
            raise _NotProved from None
        result = pa.array(mapped, out_type).take(encoded.indices)
        if values.null_count:
            result = pc.if_else(pc.is_null(values), pa.scalar(of_null, out_type), result)
        return result

    def _child(self, struct, name: str):
        return self.pc.struct_field(struct, [name])

    def _may_hold(self, key: str):
        """Per row: whether the line may hold `key` as a key (spelt out, or with \\u escapes)."""
        pc = self.pc
        found = pc.match_substring(self.texts, f'"{key}"')
        return pc.or_(found, self.escaped) if self.escaped is not None else found

    def _any(self, mask) -> bool:
        return bool(self.pc.any(mask).as_py())

    # the parse --------------------------------------------------------------------------------
    def parse(self) -> dict[str, Any] | None:
        pa, pc = self.pa, self.pc
        self._sample()
        self._lines()
        if not self.n:
            return None
        table = self._read()
        if table.num_rows != self.n:
            raise _NotProved
        columns = {name: table.column(name).combine_chunks() for name in table.column_names}
        self.escaped = None
        falses = pa.repeat(False, self.n)
        hard = falses  # rows left to the row parser

        # classify (`qlik.classify`): an envelope, or a bare metadata or data message
        magic, kind_text, message = columns["magic"], columns["type"], columns["message"]
        valid = pc.is_valid
        envelope = pc.or_(valid(magic), pc.and_(valid(kind_text), valid(message)))
        kind = self._each(kind_text, lambda v: str(v or "").upper(), pa.string())
        env_dt = pc.and_(envelope, pc.equal(kind, "DT"))
        known = pc.and_(pc.or_(env_dt, pc.equal(kind, "MD")), valid(message))
        if self._any(pc.and_(envelope, pc.invert(known))):
            raise _NotProved  # the row parser's error
        dt = env_dt
        bare = pc.invert(envelope)
        bare_dt = falses
        if not self.bare:  # the schema leaves them out: the row parser reads them
            hard = bare
        elif self._any(bare):
            escapes = b"\\" in self.raw and b"\\u" in self.raw  # memchr first: fast
            self.escaped = pc.match_substring(self.texts, "\\u") if escapes else None

            def absent(key: str):
                return pc.and_(pc.is_null(columns[key]), pc.invert(self._may_hold(key)))

            sure = pc.and_(bare, pc.and_(absent("magic"),
                                         pc.or_(absent("type"), absent("message"))))
            hard = pc.or_(hard, pc.and_(bare, pc.invert(sure)))
            is_md = pc.or_(valid(columns["tableStructure"]), valid(columns["lineage"]))
            not_md = pc.and_(absent("tableStructure"), absent("lineage"))
            hard = pc.or_(hard, pc.and_(sure, pc.invert(pc.or_(is_md, not_md))))
            sure = pc.and_(sure, not_md)
            is_dt = pc.or_(valid(columns["data"]),
                           pc.or_(valid(columns["beforeData"]), valid(columns["headers"])))
            not_dt = pc.and_(absent("data"), pc.and_(absent("beforeData"), absent("headers")))
            if self._any(pc.and_(sure, not_dt)):
                raise _NotProved  # "not a Qlik Replicate message"
            hard = pc.or_(hard, pc.and_(sure, pc.invert(pc.or_(is_dt, not_dt))))
            bare_dt = pc.and_(sure, is_dt)
            dt = pc.or_(dt, bare_dt)
        with_bare = self._any(bare_dt)

        def part(name: str):
            in_envelope = self._child(message, name)
            return pc.if_else(envelope, in_envelope, columns[name]) if with_bare else in_envelope

        data, before, headers = part("data"), part("beforeData"), part("headers")
        if self.table_filter:
            wanted = self.table_filter
            other = self._each(part("table"), lambda v: v not in (None, wanted), pa.bool_())
            dt = pc.and_(dt, pc.invert(other))

        # headers
        sequence = self._sequence(self._child(headers, "changeSequence"))
        kept = pc.and_(dt, pc.invert(self._skipped(sequence)))
        if not self._any(kept) and not self._any(hard):
            return self._output(None, {}, {}, sequence, headers)
        refresh_op = self.ctx["refresh_op"]
        codes = {"INSERT": OP_INSERT, "REFRESH": refresh_op, "UPDATE": OP_UPDATE,
                 "DELETE": OP_DELETE}
        op = self._each(self._child(headers, "operation"),
                        lambda v: codes.get(str(v or "").upper()), pa.int32())
        if self._any(pc.and_(kept, pc.is_null(op))):
            raise _NotProved  # an unknown operation: the row parser's error
        op = pc.fill_null(op, -1)
        is_delete, is_update = pc.equal(op, OP_DELETE), pc.equal(op, OP_UPDATE)

        # what each row holds: `_present` as an index into `sets` (-1: not known here)
        present, sets = self._present(kept, headers, data)
        upsert = pc.and_(kept, pc.invert(is_delete))
        hard = pc.or_(hard, pc.and_(upsert, pc.less(present, 0)))
        if self.keys:
            hard = pc.or_(hard, self._key_changes(pc.and_(kept, pc.and_(is_update, valid(before))),
                                                  data, before))
            with_keys = pc.and_(pc.and_(kept, is_update), pc.and_(valid(before), pc.invert(hard)))
            if self._any(with_keys):  # the keys come from beforeData (they equal data's)
                present = self._add_keys(present, with_keys, sets)
        # DELETE: beforeData's values when it holds any, else data's
        before_any = any_of(pc, [valid(self._child(before, n)) for n in self.names])
        data_any = any_of(pc, [valid(self._child(data, n)) for n in self.names])
        from_before = pc.and_(is_delete, before_any)
        unsure = pc.and_(valid(before), pc.and_(pc.invert(before_any), data_any))
        hard = pc.or_(hard, pc.and_(pc.and_(kept, is_delete), unsure))

        take = pc.and_(kept, pc.invert(hard))
        rows = pc.indices_nonzero(take)
        values = {}
        if len(rows):
            rows_delete = is_delete.take(rows)
            rows_present = present.take(rows)
            rows_before = from_before.take(rows)
            for name in self.names:
                in_row = pa.array([name in s for s in sets] + [False]).take(
                    pc.if_else(pc.less(rows_present, 0), len(sets), rows_present))
                wanted = pc.or_(rows_delete, in_row)
                new, old = self._child(data, name).take(rows), self._child(before, name).take(rows)
                values[name] = self._select(name, new, old, rows_before, wanted)
        listed = [None if s >= self.all else sorted(s) for s in sets] + [None]
        present_lists = pa.array(listed, pa.list_(pa.string())).take(
            pc.if_else(pc.or_(is_delete, pc.less(present, 0)), len(sets), present).take(rows))
        fast = self._output(rows, values, {OP_COLUMN: op.take(rows),
                                           PRESENT_COLUMN: present_lists},
                            sequence, headers)
        if not self._any(hard):
            return fast
        if pc.all(hard).as_py():
            raise _NotProved  # nothing for this path: the row parser reads the chunk
        return self._with_row_parser(fast, hard)

    def _sequence(self, raw):
        """`str(headers.get("changeSequence") or "")`."""
        pa, pc = self.pa, self.pc
        if pa.types.is_integer(raw.type):
            raw = pc.if_else(pc.equal(raw, 0), pa.scalar(None, pa.int64()), raw)
            raw = pc.cast(raw, pa.string())
        return pc.fill_null(raw, "")

    def _skipped(self, sequence):
        """The rows before the held-back cutoff (`order < skip_before`), in a held-back file."""
        pa, pc = self.pa, self.pc
        falses = pa.repeat(False, self.n)
        if self.path not in self.ctx.get("skip_files", ()):
            return falses
        cutoff = tuple(self.ctx["skip_before"])
        if not cutoff:
            return falses  # (…) < () is never true
        if len(cutoff) != 4 or not all(isinstance(v, t) for v, t in zip(cutoff, (str, str, int, int))) \
                or any(isinstance(v, bool) for v in cutoff):
            raise _NotProved
        seq, file, line, sub = cutoff
        # (sequence, path, line, 0) < (seq, file, line, sub), element by element
        if self.path == file:
            rest = pc.or_(pc.less(self.lines, line),
                          pc.and_(pc.equal(self.lines, line), pa.scalar(0 < sub)))
        else:
            rest = pa.repeat(self.path < file, self.n)
        return pc.or_(pc.less(sequence, seq), pc.and_(pc.equal(sequence, seq), rest))

    def _structures(self) -> tuple[Any, list[dict[int, str]], list[dict[int, str]]]:
        """Per row: which ordinal map the row parser's walk over `ctx["structures"]` has in
        effect there (an index into the second list); and the metadata messages' maps."""
        import numpy as np

        structures = [(s[0], s[1], {int(k): v for k, v in s[2].items()})
                      for s in self.ctx["structures"]]
        default = {int(k): v for k, v in self.ctx["default_ordinals"].items()}
        maps = [m for _, _, m in structures]
        # the first line of this file from which the walk has passed metadata message k
        reach, bound = [], float("-inf")
        for file, line, _ in structures:
            need = float("-inf") if file < self.path else (line if file == self.path
                                                           else float("inf"))
            bound = max(bound, need)
            reach.append(bound)
        effect = np.searchsorted(np.array(reach, dtype=np.float64),
                                 self.lines.to_numpy().astype(np.float64), side="right")
        # walk index -1 (nothing passed yet) has the first metadata message's map in effect
        return self.pa.array(effect), [maps[0] if maps else default] + maps, maps

    def _present(self, kept, headers, data):
        """`_present` of every kept row as an index into the returned sets of names: the
        columnMask's columns, else data's (-1 where data's keys aren't known: nulls)."""
        pa, pc = self.pa, self.pc
        sets: list[frozenset] = [self.all, frozenset()]
        complete = all_of(pc, [pc.is_valid(self._child(data, n)) for n in self.names])
        present = pc.if_else(complete, 0, pc.if_else(pc.is_valid(data), -1, 1))
        mask = self._child(headers, "columnMask")
        has_mask = pc.and_(kept, pc.fill_null(pc.not_equal(mask, ""), False))
        if not self._any(has_mask):
            return pc.cast(present, pa.int64()), sets
        effect, in_effect, maps = self._structures()
        keys = pc.binary_join_element_wise(pc.cast(effect, pa.string()), mask, "|")
        encoded = pc.dictionary_encode(pc.if_else(has_mask, keys, pa.scalar(None, pa.string())))
        index: dict[frozenset, int] = {s: i for i, s in enumerate(sets)}
        ids = []
        for key in encoded.dictionary.to_pylist():
            effect_text, _, text = key.partition("|")
            chosen = self._mask_columns(text, in_effect[int(effect_text)], maps)
            ids.append(index.setdefault(chosen, len(index)))
        sets = list(index)
        masked = pa.array(ids, pa.int64()).take(encoded.indices)
        return pc.cast(pc.if_else(has_mask, masked, present), pa.int64()), sets

    def _mask_columns(self, mask: str, current: dict[int, str], maps: list) -> frozenset:
        """The row parser's columns of a columnMask under the ordinal map in effect (a mask
        naming ordinals that map lacks: the newest metadata message that has them all)."""
        try:
            ordinals = qlik.mask_ordinals(mask)
            mapping = current
            if not ordinals <= current.keys():
                mapping = next((m for m in reversed(maps) if ordinals <= m.keys()), current)
        except (ValueError, TypeError):
            raise _NotProved from None  # the row parser's error (or its crash)
        return frozenset(mapping[o] for o in ordinals if o in mapping) & self.all

    def _key_changes(self, rows, data, before):
        """Among UPDATE rows with beforeData, those whose key handling needs the row parser:
        a key missing (or null) on either side, keys of two kinds, keys that differ (a key
        change), doubles Python would compare as ints, NaN keys."""
        pa, pc = self.pa, self.pc
        unsure = pa.repeat(False, self.n)
        for key in self.keys:
            new, old = self._child(data, key), self._child(before, key)
            if not new.type.equals(old.type):
                return rows
            odd = pc.or_(pc.is_null(new), pc.is_null(old))
            odd = pc.or_(odd, pc.fill_null(pc.not_equal(new, old), True))
            if pa.types.is_floating(new.type):
                odd = pc.or_(odd, pc.fill_null(pc.greater_equal(pc.abs(new), 2.0 ** 53), True))
            elif self.types[key] in _FLOATS and pa.types.is_string(new.type):
                odd = pc.or_(odd, pc.invert(pc.fill_null(pc.match_substring_regex(new, DECIMAL),
                                                         False)))
            unsure = pc.or_(unsure, odd)
        return pc.and_(rows, unsure)

    def _add_keys(self, present, rows, sets: list[frozenset]):
        pa, pc = self.pa, self.pc
        keys = frozenset(self.keys) & self.all
        index = {s: i for i, s in enumerate(sets)}
        widened = []
        for s in list(sets):
            widened.append(index.setdefault(s | keys, len(index)))
        sets[:] = list(index)
        return pc.if_else(rows, pa.array(widened, pa.int64()).take(
            pc.if_else(pc.less(present, 0), 0, present)), present)

    # values -----------------------------------------------------------------------------------
    def _select(self, name: str, new, old, from_old, wanted):
        pc = self.pc
        if new.type.equals(old.type):
            return self.value(name, pc.if_else(from_old, old, new), wanted)
        return pc.if_else(from_old, self.value(name, old, pc.and_(wanted, from_old)),
                          self.value(name, new, pc.and_(wanted, pc.invert(from_old))))

    def out_type(self, name: str):
        pa = self.pa
        kind = self.types[name]
        if kind in _INT_BITS:
            return getattr(pa, f"int{_INT_BITS[kind]}")()
        return {"double": pa.float64(), "single": pa.float32(), "boolean": pa.bool_(),
                "bytearray": pa.binary(), "idate": pa.date32(),
                "datetime": pa.timestamp("us", tz="UTC"),
                "itime": pa.timestamp("us", tz="UTC")}.get(kind, pa.string())

    def value(self, name: str, raw, wanted):
        """`raw` (a JSON kind's Arrow array) converted as `value_converter` converts it, where
        `wanted`; NULL elsewhere."""
        pa, pc = self.pa, self.pc
        values = pc.if_else(wanted, raw, pa.scalar(None, raw.type))
        kind, out = self.types[name], self.out_type(name)
        present = len(values) - values.null_count
        if not present:
            return pa.nulls(len(values), out)
        if kind == "boolean" and pa.types.is_boolean(values.type):
            return values
        if kind == "string":
            if pa.types.is_string(values.type):
                return values
            if pa.types.is_integer(values.type):
                return pc.cast(values, pa.string())  # repr(int)
            if pa.types.is_boolean(values.type):
                return pc.if_else(values, "true", "false")
        elif kind in _INT_BITS:
            numbers = None
            if pa.types.is_integer(values.type):
                numbers = values
            elif pa.types.is_string(values.type) and all_match(pc, values, INTEGER, present):
                numbers = pc.cast(values, pa.int64())
            if numbers is not None:
                bits = _INT_BITS[kind]
                bounds = pc.min_max(numbers)
                if bounds["min"].as_py() < -(1 << (bits - 1)) or bounds["max"].as_py() >= 1 << (bits - 1):
                    raise _NotProved
                return pc.cast(numbers, out)
        elif kind in _FLOATS:
            numbers = None
            if pa.types.is_floating(values.type):
                numbers = values
                zero = pc.fill_null(pc.equal(values, 0.0), False)
                if self._any(zero) and _negative_zero(values.filter(zero)):
                    raise _NotProved  # `-0` is int 0 (+0.0) to orjson, -0.0 to Arrow
            elif pa.types.is_string(values.type) and all_match(pc, values, DECIMAL, present):
                numbers = pc.cast(values, pa.float64())
            if numbers is not None:
                return numbers if kind == "double" else pc.cast(numbers, out, safe=False)
        elif kind in ("datetime", "idate") and pa.types.is_string(values.type):
            pattern, parsed = (_DATETIME, pa.timestamp("us")) if kind == "datetime" \
                else (_DATE, pa.date32())
            if all_match(pc, values, pattern, present):
                try:
                    return pc.cast(pc.cast(values, parsed), out)
                except (pa.ArrowInvalid, ValueError):
                    pass  # Python reports it (or converts what Arrow refuses)
        if pa.types.is_floating(values.type):
            raise _NotProved  # a double's Python value may have been an int: not here
        return self._each(values, lambda v: None if v is None else self.converters[name](v), out)

    # output -----------------------------------------------------------------------------------
    def _output(self, rows, values: dict, change: dict, sequence, headers) -> dict[str, Any]:
        pa, pc = self.pa, self.pc
        if rows is None:
            rows = pa.array([], pa.uint64())
        n = len(rows)
        lines = self.lines.take(rows)
        order = pa.StructArray.from_arrays(
            [sequence.take(rows), pa.repeat(pa.scalar(self.path, pa.string()), n), lines,
             pa.repeat(pa.scalar(0, pa.int32()), n)], names=["seq", "file", "line", "sub"])
        txn = self._child(headers, "transactionId").take(rows)
        txn = pc.if_else(pc.equal(txn, ""), pa.scalar(None, pa.string()), txn)
        last = self._each(self._child(headers, "transactionLastEvent").take(rows), qlik.as_bool,
                          pa.bool_())
        out = {name: values.get(name, pa.nulls(n, self.out_type(name))) for name in self.names}
        out.update({OP_COLUMN: change.get(OP_COLUMN, pa.array([], pa.int32())),
                    ORDER_COLUMN: order,
                    PRESENT_COLUMN: change.get(PRESENT_COLUMN, pa.nulls(n, pa.list_(pa.string()))),
                    SOURCE_FILE_COLUMN: pa.repeat(pa.scalar(self.path, pa.string()), n),
                    SOURCE_LINE_COLUMN: lines, PAIR_COLUMN: pa.nulls(n, pa.string()),
                    ERROR_COLUMN: pa.nulls(n, pa.string()), "_txn": txn, "_txn_last": last})
        return out

    def _with_row_parser(self, fast: dict[str, Any], hard) -> dict[str, Any]:
        """`fast` and the row parser's rows of the `hard` messages (the chunk with every other
        line blanked: lines, order and masks stay what they are in the whole chunk)."""
        pa = self.pa
        texts = [""] * len(self.all_lines)
        positions = self.positions.filter(hard).to_pylist()
        for position, text in zip(positions, self.all_lines.take(positions).to_pylist()):
            texts[position] = text
        task = dict(self.task, data="\n".join(texts).encode(), compressed=False,
                    ctx=dict(self.ctx, columnwise=False))
        lists = qlik.parse_rows(task)
        if any(e is not None for e in lists[ERROR_COLUMN]):
            raise _NotProved  # the row parser reports it, reading the whole chunk
        slow = {}
        for name, column in fast.items():
            values = lists[name]
            if name == ORDER_COLUMN:
                children = [pa.array([v[i] for v in values], column.type.field(i).type)
                            for i in range(column.type.num_fields)]
                slow[name] = pa.StructArray.from_arrays(
                    children, fields=[column.type.field(i) for i in range(column.type.num_fields)])
            else:
                slow[name] = pa.array(values, column.type)
        return {name: pa.concat_arrays([fast[name], slow[name]]) for name in fast}


def _first_lines(raw: bytes, start: int, count: int) -> list[bytes]:
    """The first `count` non-blank lines of `raw` from offset `start`."""
    lines = []
    while len(lines) < count and start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end == -1 else end
        if raw[start:end].strip():
            lines.append(raw[start:end])
        start = end + 1
    return lines


def _kind_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _negative_zero(zeros) -> bool:
    import numpy as np

    return bool(np.signbit(zeros.to_numpy(zero_copy_only=False)).any())


__all__ = ["parse_lines_chunk"]
