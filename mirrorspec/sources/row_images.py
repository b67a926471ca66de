"""What the row-image JSON feeds share (GoldenGate JSON, Canal FlatMessage, Maxwell).

Each of these producers writes one JSON message per change (Canal: per statement) that names its
table and carries row images as JSON objects keyed by column name. The three parsers share:
options (`key_columns`, `table`), routing by table name, the image → canonical values step
(absent columns stay absent, never NULL), the position guard (a position that goes backwards
inside a file stops the table) and schema inference from the JSON values.

The canonical rows have the order struct ORDER_FIELDS: (position, file, line, part, source).
`source` is the message's own producer position as a string that sorts like the position (None
where the message has none: Canal, Maxwell's bootstrap rows or rows without
output_binlog_position). `position` is what the batch sorts by: `source`, or for a message
without one the position of the positioned message before it in its file (`borrow_positions`),
so it keeps its place in the feed; the Spark reader gives a file's leading unpositioned rows
the greatest position of the batch's earlier files (the "positions" note).

A parser can leave notes for its Spark reader (`notes`, a list): (kind, details, order, line).

Every row ends with its `_delivery` value (`mirrorspec.sources.delivery`): `DeliveryGate` runs
one file's messages through `delivery.FileCheck` with the position each format's
`delivery_of` gives, so a re-sent message yields no rows.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import extended_json
from mirrorspec.sources.base import (OP_DELETE, OP_INSERT, OP_TRUNCATE, InferredColumn,
                                     InferredSchema, iter_json_documents, value_converter)
from mirrorspec.sources.debezium import Row, TableShape, coerce, local_feed_texts
from mirrorspec.sources.reload_runs import RELOAD_REPEATED
from mirrorspec.sources.delivery import (SNAPSHOT, STREAM, Delivery, DeliveryError,
                                         FileCheck, Marks, channel_of, partition_name,
                                         repeats_land)
from mirrorspec.sources.producers import redelivers

ORDER_FIELDS = (("position", "string"), ("file", "string"), ("line", "bigint"), ("part", "int"),
                ("source", "string"))
POSITIONS_NOTE = "positions"  # details: [the greatest position in the file]
TRUNCATE_NOTE = "truncate"    # a truncate row (the Spark reader resolves it on keyless tables)
Note = tuple  # (kind, details: list of texts, order tuple, line)
_ERRORS = (ValueError, TypeError, KeyError, ArithmeticError, binascii.Error)


@dataclass(frozen=True)
class RowImageOptions:
    """`source.options` of a row-image feed: `key_columns` when the YAML has none, and `table`
    (keep only the messages of that table: `name` or `qualifier.name`, case-insensitive)."""

    key_columns: tuple[str, ...] = ()
    table: str | None = None
    repeats_land: bool = False  # keyless_repeats: land (delivery.repeats_land)


def parse_options(options: dict[str, Any] | None) -> RowImageOptions:
    """`source.options` as RowImageOptions (the JSON Schema checked names and values)."""
    options = dict(options or {})
    keys = options.get("key_columns") or ()
    if isinstance(keys, str):
        keys = (keys,)
    table = options.get("table")
    return RowImageOptions(tuple(str(k) for k in keys), str(table) if table else None,
                           repeats_land(options))


class TableRouter:
    """Which messages belong to the table. With `options.table`: the messages naming it.
    Without: every message, but a file naming two tables is an error (they would mix)."""

    def __init__(self, wanted: str | None, file: str, format_name: str):
        self.wanted = wanted.lower() if wanted else None
        self.file = file
        self.format_name = format_name
        self.first: tuple[str, int] | None = None

    def keeps(self, qualified: str, line: int) -> bool:
        """True when the message of table `qualified` ("schema.table") is this table's."""
        if self.wanted is not None:
            return _names(self.wanted, qualified)
        if self.first is None:
            self.first = (qualified, line)
        elif qualified != self.first[0]:
            raise SourceError(
                f"the feed mixes tables: {qualified!r} here, {self.first[0]!r} at line "
                f"{self.first[1]}", file=self.file, line=line,
                hint=f"set source.options.table to the {self.format_name} table this table "
                     "mirrors (one table per source in the YAML)")
        return True


RESENT = "resent"  # the skip-count kind of messages the delivery checks found re-sent


class DeliveryGate:
    """The delivery checks of one row-image file, in file order (`delivery.FileCheck`): each
    message's rows with their `_delivery` value appended, or none for a re-send (counted in
    `skipped` as RESENT). A keyless table's message without a position (Canal's FlatMessage,
    Maxwell without `output_binlog_position`) lands as sent unless the file sent an equal one
    before (docs/sources.md, Delivery)."""

    def __init__(self, source_type: str, shape: TableShape, file: str, marks: Marks | None,
                 skipped: dict[str, int] | None = None, repeats_land: bool = False):
        self.file = file
        self.check = FileCheck(marks, keyed=bool(shape.key_columns),
                               redelivers=redelivers(source_type), file=file,
                               repeats_land=repeats_land)
        self.repeats_land = repeats_land
        self.channel = channel_of(file)
        self.width = len(shape.columns)
        self.skipped = skipped
        self.keyed = bool(shape.key_columns)
        self._run: FileCheck | None = None  # the current reload run's rows (`reload`)

    def admit(self, rows: list[Row], stream: str, position: tuple[int, ...] | None,
              exact: bool, line: int) -> list[Row]:
        """`rows` (one message's) with their `_delivery` value; [] for a re-send. `stream` is
        the producer's stream within the file's channel, `position` the message's place there
        (None without one), `exact` when no two messages share a position."""
        if not rows:
            return rows
        delivery = Delivery(partition_name(self.channel, stream), STREAM, position, exact)
        width = self.width
        content = tuple((r[width], r[:width], r[width + 2] and tuple(r[width + 2]))
                        for r in rows)
        try:
            value = self.check.admit(delivery, (), content)
        except DeliveryError as exc:
            raise SourceError(exc.message, file=self.file, line=line, hint=exc.hint) from None
        if value is None:
            if self.skipped is not None:
                self.skipped[RESENT] = self.skipped.get(RESENT, 0) + 1
            return []
        return [r + (value,) for r in rows]

    def replace(self, rows: list[Row], stream: str, phase: int = STREAM) -> list[Row]:
        """Rows of a whole-table reload (a bootstrap, an initial load, a truncate without a
        position) with a `_delivery` value and no check: the reload replaces the table, so
        sending it again is harmless."""
        value = Delivery(partition_name(self.channel, stream), phase, None).value()
        return [r + (value,) for r in rows]

    def reload(self, rows: list[Row], stream: str, line: int, start: bool) -> list[Row]:
        """Rows of a reload that no message opens (Canal/DTS INIT: a run of INIT messages is
        one load; `start` for the run's first message), as `replace` gives them but read in
        the SNAPSHOT phase (full-load reads: `spark.publish.reloads` checks a keyless table's
        runs across files and batches). A load run again right after itself reads as one run,
        so a keyless table's row equal to one the run already sent in this file stops the
        table (`delivery.FileCheck`): a load started again and a source table holding the row
        twice look alike, and landing both would double the table."""
        if start or self._run is None:
            self._run = FileCheck(None, keyed=self.keyed, redelivers=True, file=self.file)
        if not self.keyed and not self.repeats_land:
            delivery = Delivery(partition_name(self.channel, stream), SNAPSHOT, None)
            width = self.width
            for row in rows:
                try:
                    self._run.admit(delivery, (), (row[width], row[:width]))
                except DeliveryError as exc:
                    raise SourceError(RELOAD_REPEATED, file=self.file, line=line,
                                      hint=exc.hint) from None
        return self.replace(rows, stream, SNAPSHOT)


def digit_position(text: str, parts: int = 2) -> tuple[int, ...]:
    """A position written as decimal digits (GoldenGate's `pos`, longer than a 64-bit integer
    may hold) as `parts` integers of 18 digits, compared as the whole number is. Raises
    ValueError for other text or more digits than `parts` hold."""
    if not text.isascii() or not text.isdigit() or len(text.lstrip("0")) > 18 * parts:
        raise ValueError(f"{text!r} is not a position of at most {18 * parts} digits")
    padded = text.zfill(18 * parts)[-18 * parts:]
    return tuple(int(padded[i:i + 18]) for i in range(0, 18 * parts, 18))


@dataclass
class BatchPlan:
    """What a format's reader makes of its parser's notes over a whole batch (pure; see
    `spark.publish.feeds.row_images`): files to hold back until the next run, truncates
    (file, line) to drop, and the reader state to keep for the next batch."""

    held: list[str] = field(default_factory=list)
    dropped: list[tuple[str, int]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)


# notes (dicts: kind, details, file, line, order; sorted by file and line), the batch's files
# sorted, the reader state of the batches before → the BatchPlan
Planner = Callable[[list[dict[str, Any]], list[str], dict[str, Any]], BatchPlan]
Prepare = Callable[[Any, str], Any]


def _identity(value: Any, data_type: str) -> Any:
    return value


class ImageReader:
    """Turns a row image (a JSON object) into values in table order for one file."""

    def __init__(self, shape: TableShape, file: str, prepare: Prepare = _identity,
                 binary: str = "base64"):
        self.shape = shape
        self.file = file
        self.prepare = prepare
        self.binary = binary
        self.names = shape.names
        self.key_positions = [self.names.index(k) for k in shape.key_columns]
        self.converters = [_converter(data_type, binary) for _, data_type in shape.columns]

    def values(self, image: Any, line: int, what: str, partial: bool
               ) -> tuple[list, list | None]:
        """(values in table order, present names or None). A column the image lacks is absent
        when `partial` (an update: completed from the current row), else NULL (a new row)."""
        if not isinstance(image, dict):
            raise SourceError(f"'{what}' is not an object", file=self.file, line=line)
        values: list = []
        present: list[str] = []
        absent = False
        for (name, data_type), convert in zip(self.shape.columns, self.converters):
            if name not in image:
                values.append(None)
                if partial:
                    absent = True
                else:
                    present.append(name)
                continue
            raw = image[name]
            try:
                value = self.prepare(raw, data_type) if raw is not None else None
                values.append(None if value is None else convert(value))
            except _ERRORS as exc:
                raise SourceError(f"column {name!r} ({data_type}): cannot read {raw!r} in "
                                  f"'{what}': {exc}", file=self.file, line=line,
                                  hint="fix the value or the column's type in the YAML"
                                  ) from None
            present.append(name)
        return values, (present if absent else None)

    def key(self, values: list) -> tuple:
        return tuple(values[i] for i in self.key_positions)

    def has_keys(self, image: Any) -> bool:
        return isinstance(image, dict) and all(k in image for k in self.shape.key_columns)

    def need_keys(self, line: int, what: str) -> None:
        if not self.shape.key_columns:
            raise SourceError(f"{what} for a table without key columns", file=self.file,
                              line=line, hint="declare key_columns for the table (or in "
                                              "source.options)")


_STRICT_TYPES = ("Int16", "Int32", "Int64", "Double", "Single")


def _converter(data_type: str, binary: str) -> Callable[[Any], Any]:
    """A column's value converter: numbers by the shared strict rules (`sources.base`: what an
    integer or a floating column accepts), the other types as Debezium's JSON values are read."""
    if data_type in _STRICT_TYPES:
        return value_converter(data_type)
    return lambda value: coerce(value, data_type, "ms", binary)


def change_row(values: list, op: int, position: str | None, file: str, line: int, part: int,
               present: list | None) -> Row:
    """A canonical row: the values, then (op, order, present, file, line). `position` is the
    message's own (None without one); borrow_positions sets the sort position of the others."""
    return (*values, op, (position, file, line, part, position), present, file, line)


def truncate_row(width: int, position: str | None, file: str, line: int, part: int,
                 notes: list[Note] | None) -> Row:
    """A truncate (every row of the table is removed at this point), noted for the reader."""
    if notes is not None:
        notes.append((TRUNCATE_NOTE, [], (position, file, line, part, position), line))
    return change_row([None] * width, OP_TRUNCATE, position, file, line, part, None)


def borrow_positions(rows: Iterable[Row], width: int, file: str,
                     notes: list[Note] | None = None) -> Iterator[Row]:
    """`rows` (of one file, in file order, `width` table columns) with the rows that have no
    position of their own sorted at the position of the positioned row before them; rows
    before the file's first position keep None (the Spark reader fills them in from the
    earlier files). Notes the file's greatest position when it has one."""
    index = width + 1
    last: str | None = None
    for row in rows:
        order = row[index]
        if order[0] is not None:
            last = order[0]
        elif last is not None:
            row = (*row[:index], (last, *order[1:]), *row[index + 1:])
        yield row
    if notes is not None and last is not None:
        notes.append((POSITIONS_NOTE, [last], (last, file, 0, 0, None), 0))


def key_change_rows(reader: ImageReader, old: list, new: list, present: list | None,
                    position: str | None, file: str, line: int, part: int,
                    hint: str = "") -> list[Row] | None:
    """Delete of the old key + insert of the new one when the key changed, else None.

    The new key's row must be whole: its missing columns could only come from the old key's
    row, which these readers don't pair with it, and an absent column never becomes NULL."""
    if reader.key(old) == reader.key(new):
        return None
    if present is not None:
        missing = [n for n in reader.names if n not in present]
        raise SourceError(f"key change without the whole new row (missing: "
                          f"{', '.join(missing[:5])}{', …' if len(missing) > 5 else ''})",
                          file=file, line=line, hint=hint or "configure the producer to send "
                          "full row images")
    return [change_row(old, OP_DELETE, position, file, line, part, None),
            change_row(new, OP_INSERT, position, file, line, part + 1, present)]


def zero_date_to_null(value: Any, data_type: str) -> Any:
    """MySQL's zero dates (`0000-00-00`, `0000-00-00 00:00:00`) are no date: NULL, as JDBC's
    zeroDateTimeBehavior=convertToNull reads them."""
    if data_type in ("DateTime", "IDate") and isinstance(value, str) \
            and value.startswith("0000-00-00"):
        return None
    return value


# --- schema inference from JSON values (compile time) ------------------------------------------

def json_columns(images: Iterable[dict[str, Any]]) -> tuple[InferredColumn, ...]:
    """Columns in first-seen order; each typed by its first non-null value (String if none)."""
    kinds: dict[str, str | None] = {}
    for image in images:
        for name, value in image.items():
            if kinds.get(name) is None and value is not None:
                kinds[name] = extended_json.data_type_of(value)
            kinds.setdefault(name, None)
    return tuple(InferredColumn(name, kind or "String") for name, kind in kinds.items())


def qualified_name(message: dict[str, Any]) -> str:
    """`database.table` of a MySQL binlog message (Canal, Maxwell)."""
    return f"{message.get('database') or ''}.{message.get('table') or ''}"


def local_messages(path: str, limit: int = 10_000) -> Iterator[tuple[str, int, Any]]:
    """(file, line, message) of the first `limit` JSON messages under a local feed path."""
    seen = 0
    for file, text in local_feed_texts(path):
        for line, message in iter_json_documents(text, file):
            yield file, line, message
            seen += 1
            if seen >= limit:
                return


Picked = tuple[Iterable[Any], Any]  # a message's row images, and its key names (if it has any)


def infer_from_images(path: str, options: dict[str, Any] | None,
                      pick: Callable[[dict[str, Any], RowImageOptions], Picked | None]
                      ) -> InferredSchema | None:
    """The schema of a local feed whose types come from JSON values (GoldenGate, Maxwell):
    columns typed by the row images' values, keys from the first message that lists them.
    `pick` gives a message's images and key names, or None for a message that is not a row of
    the table. A remote path is not read (None)."""
    opts = parse_options(options)
    if "://" in path and not path.startswith("file:"):
        return None
    rows: list[dict[str, Any]] = []
    keys: list[str] = []
    origin = ""
    for file, line, message in local_messages(path, limit=1000):
        picked = pick(message, opts) if isinstance(message, dict) else None
        if picked is None:
            continue
        images, names = picked
        for image in images:
            if isinstance(image, dict):
                rows.append(image)
                origin = origin or f"{file}:{line}"
        if not keys and isinstance(names, list):
            keys = [str(k) for k in names]
    return inferred(json_columns(rows), keys, origin, opts)


def inferred(columns: Sequence[InferredColumn], keys: Sequence[str], origin: str,
             options: RowImageOptions, types_guessed: bool = True) -> InferredSchema | None:
    """The InferredSchema, keys from options first; None when nothing was found. Types taken
    from JSON values are guesses: the YAML's declared types win over them."""
    keys = options.key_columns or tuple(keys)
    if not columns and not keys:
        return None
    return InferredSchema(columns=tuple(columns), key_columns=tuple(keys), origin=origin,
                          types_guessed=types_guessed)


def table_name_matches(options: RowImageOptions, qualified: str) -> bool:
    """Inference keeps the messages `options.table` names (all without it)."""
    return not options.table or _names(options.table, qualified)


def _names(wanted: str, qualified: str) -> bool:
    name = qualified.lower()
    return wanted.lower() in (name, name.rsplit(".", 1)[-1])
