"""Debezium events → canonical rows (pure Python; Spark workers run it).

- `op` r/c → insert (0), u → update (1), d → delete (2, key from `before`), t → truncate (8);
  `m` (logical decoding messages) and tombstones (`null` values) are skipped.
- An update whose key differs between `before` and `after` → delete of the old key, then insert.
- `__debezium_unavailable_value` (Postgres TOAST, Oracle LOB placeholders) → the column is absent
  (`_present`), never the literal; `after` lacking it takes the event's own `before`.
- MongoDB events: documents as Extended JSON text, updates as `updateDescription` or `patch`.
- Order: each connector's documented source position (`positions`); re-sent events are found by
  the delivery checks (`mirrorspec.sources.delivery`) and yield no rows.
"""

from __future__ import annotations

import binascii
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import avro, extended_json
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_TRUNCATE, OP_UPDATE, OP_UPSERT
from mirrorspec.sources.debezium.envelope import (MONGO_ID, Control, Event, iter_records,
                                                  row_fields, to_event)
from mirrorspec.sources.debezium.options import DebeziumOptions
from mirrorspec.sources.debezium.placeholders import placeholder as placeholder_of
from mirrorspec.sources.debezium.positions import (PositionError, StreamCheck, delivery_of,
                                                   position_of, stream_of)
from mirrorspec.sources.debezium.types import NO_KIND, Kind, converter, field_kind
from mirrorspec.sources.delivery import DeliveryError, FileCheck, Marks, channel_of


@dataclass(frozen=True)
class TableShape:
    """What a parser needs of the table: its columns (name, DataType) and key columns."""

    columns: tuple[tuple[str, str], ...]
    key_columns: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


# A canonical row as the parsers emit it: column values in table order, then
# (op, order tuple, present list or None, file, line); EventParser adds the `_delivery` value.
Row = tuple


_PLACEHOLDER_TYPES = (str, list, dict, bytes, bytearray)


class EventParser:
    """Turns the events of one file into canonical rows for one table. `marks` are the
    delivery marks of earlier batches (`delivery.Marks`): events they cover, and events the
    file repeats, are re-sends and yield no rows (`delivery.FileCheck`)."""

    def __init__(self, shape: TableShape, options: DebeziumOptions, file: str,
                 marks: Marks | None = None):
        self.shape = shape
        self.options = options
        self.file = file
        self._last_fields: list | None = None
        self._last_converters: list | None = None
        self._plain = self._build_converters({})
        self._stream = StreamCheck()
        try:
            self._placeholder = placeholder_of(options.placeholder)
        except ValueError as exc:
            raise SourceError(str(exc), file=file,
                              hint="fix source.options.unavailable_value_placeholder") from None
        self._channel = channel_of(file)
        self._check = FileCheck(marks, keyed=bool(shape.key_columns), file=file,
                                repeats_land=options.repeats_land)
        self._width = len(shape.columns)
        self._key_indexes = [shape.names.index(k) for k in shape.key_columns]
        self.resent = False  # whether the last event was a re-send (rows() returned none)

    def _converters(self, schema: dict[str, Any] | None) -> list[Callable[[Any], Any]]:
        """One converter per table column for events of `schema` (reused while the row schema
        stays equal, which it does from one event to the next)."""
        fields = row_fields(schema)
        if not fields:
            return self._plain
        if fields != self._last_fields:
            self._last_fields = fields
            self._last_converters = self._build_converters({f.get("field"): field_kind(f)
                                                            for f in fields})
        return self._last_converters

    def _build_converters(self, kinds: dict[str, Kind]) -> list[Callable[[Any], Any]]:
        return [converter(kinds.get(name, NO_KIND), data_type, self.options.time_unit)
                for name, data_type in self.shape.columns]

    def _matches_table(self, envelope: dict[str, Any]) -> bool:
        wanted = self.options.table
        if not wanted:
            return True
        source = envelope.get("source") or {}
        table = source.get("table") or source.get("collection")
        schema = source.get("schema") or source.get("db")
        return wanted in (table, f"{schema}.{table}")

    def _image(self, image: Any, event: Event, what: str, partial: bool) -> tuple[list, list | None]:
        """(values in table order, present names or None) of a `before`/`after` image."""
        if isinstance(image, str):  # MongoDB connectors send the document as JSON text
            image = self._document(image, event, what)
        if not isinstance(image, dict):
            raise SourceError(f"'{what}' is not an object", file=self.file, line=event.line)
        converters = self._converters(event.value_schema)
        values: list = []
        present: list[str] = []
        absent = False
        unavailable = self._placeholder.matches
        for (name, data_type), convert in zip(self.shape.columns, converters):
            if name not in image:
                if partial:
                    absent = True
                    values.append(None)
                    continue
                values.append(None)
                present.append(name)
                continue
            raw = image[name]
            if type(raw) is dict and raw and str(next(iter(raw))).startswith("$"):
                raw = self._extended(raw, event, what)  # an Extended-JSON wrapper
            if raw is None:
                values.append(None)
                present.append(name)
                continue
            if type(raw) in _PLACEHOLDER_TYPES and unavailable(raw):
                absent = True
                values.append(None)
                continue
            try:
                values.append(convert(raw))
            except (ValueError, TypeError, KeyError, ArithmeticError, binascii.Error) as exc:
                hint = "fix the value or the column's type in the YAML"
                if avro.is_wrapper(raw):
                    hint += ("; it looks like an Avro union wrapper: read Avro JSON dumps with "
                             "source.options.avro (docs/sources/debezium.md)")
                raise SourceError(f"column {name!r} ({data_type}): cannot read {raw!r} "
                                  f"in '{what}': {exc}", file=self.file, line=event.line,
                                  hint=hint) from None
            present.append(name)
        return values, (present if absent else None)

    def _document(self, text: str, event: Event, what: str) -> Any:
        """A MongoDB document sent as Extended-JSON text, decoded."""
        try:
            return extended_json.loads(text)
        except json.JSONDecodeError as exc:
            raise SourceError(f"'{what}' is not a JSON document: {exc.msg}", file=self.file,
                              line=event.line) from None
        except extended_json.ExtendedJsonError as exc:
            raise SourceError(f"'{what}': {exc}", file=self.file, line=event.line) from None

    def _extended(self, value: Any, event: Event, what: str) -> Any:
        try:
            return extended_json.decode(value)
        except extended_json.ExtendedJsonError as exc:
            raise SourceError(f"'{what}': {exc}", file=self.file, line=event.line) from None

    def _key(self, values: list) -> tuple:
        names = self.shape.names
        return tuple(values[names.index(k)] for k in self.shape.key_columns)

    def _key_image(self, event: Event) -> dict[str, Any] | None:
        """The row key from the Kafka key, or a MongoDB event's `filter` (1.x oplog mode).
        The MongoDB connector's key is `{"id": "<the _id as Extended JSON>"}`."""
        key = event.key
        if isinstance(key, dict) and all(k in key for k in self.shape.key_columns):
            return key
        keys = self.shape.key_columns
        if keys == (MONGO_ID,) and isinstance(key, dict) and isinstance(key.get("id"), str):
            return {MONGO_ID: self._document(key["id"], event, "key")}
        filter_text = event.envelope.get("filter")
        if isinstance(filter_text, str):
            found = self._document(filter_text, event, "filter")
            if isinstance(found, dict) and all(k in found for k in keys):
                return found
        return None

    def rows(self, event: Event) -> list[Row]:
        """The canonical rows of one event (none, one, or two for a key change); none for an
        event the delivery checks find re-sent (`resent` is then True)."""
        self.resent = False
        envelope = event.envelope
        if not self._matches_table(envelope):
            return []
        position, order, stream = self._position(event)
        rows = self._change_rows(event, order, stream)
        if not rows:
            return rows
        width = self._width
        if len(rows) == 1:
            row = rows[0]
            content: Any = (row[width], row[:width], row[width + 2] and tuple(row[width + 2]))
        else:
            content = tuple((r[width], r[:width], r[width + 2] and tuple(r[width + 2]))
                            for r in rows)
        delivery = delivery_of(position, self._channel)
        key: tuple = ()
        if delivery.per_key:
            if rows[0][width] == OP_TRUNCATE:
                # a truncate waits for every transaction on the table: it orders all changes
                delivery = delivery._replace(per_key=False)
            else:
                key = tuple(rows[-1][i] for i in self._key_indexes)
        try:
            value = self._check.admit(delivery, key, content)
        except DeliveryError as exc:
            raise SourceError(f"{exc.message} (source position fields: {position.fields})",
                              file=self.file, line=event.line, hint=exc.hint) from None
        self.resent = value is None
        if value is None:
            return []
        return [r + (value,) for r in rows]

    def _change_rows(self, event: Event, order: tuple, stream: str) -> list[Row]:
        envelope = event.envelope
        op = envelope.get("op")
        width = len(self.shape.columns)

        def row(op_code: int, values: list, present: list | None, part: int) -> Row:
            return (*values, op_code, (*order, self.file, event.line, part, stream), present,
                    self.file, event.line)

        if op in ("r", "c"):
            values, present = self._image(envelope.get("after"), event, "after", False)
            return [row(OP_INSERT, values, present, 0)]
        if op == "u":
            self._need_keys(event, "update")
            if envelope.get("after") is None and (
                    "updateDescription" in envelope or "patch" in envelope):
                values, present = self._mongo_update(event)
                return [row(OP_UPDATE, values, present, 0)]
            values, present = self._image(envelope.get("after"), event, "after", True)
            before = envelope.get("before")
            if isinstance(before, dict):
                old, old_present = self._image(before, event, "before", True)
                if present is not None:
                    present = self._from_before(values, present, old, old_present)
                if all(k in before for k in self.shape.key_columns) and \
                        self._key(old) != self._key(values):
                    return [row(OP_DELETE, old, None, 0), row(OP_INSERT, values, present, 1)]
            return [row(OP_UPDATE, values, present, 0)]
        if op == "d":
            self._need_keys(event, "delete")
            before = envelope.get("before")
            if before is None:
                before = self._key_image(event)
            if before is None:
                raise SourceError("delete event without a 'before' image (or Kafka key)",
                                  file=self.file, line=event.line,
                                  hint="configure the source table's replica identity so "
                                       "deletes carry the key; for MongoDB keep the Kafka "
                                       "record key in the feed ({key, value} records or "
                                       "print.key=true)")
            values, _ = self._image(before, event, "before", True)
            return [row(OP_DELETE, values, None, 0)]
        if op == "t":
            return [row(OP_TRUNCATE, [None] * width, None, 0)]
        if op == "m":
            return []
        if op == "_upsert":  # an unwrapped row without __op
            values, present = self._image(envelope.get("after"), event, "after", False)
            return [row(OP_UPSERT if self.shape.key_columns else OP_INSERT, values, present, 0)]
        raise SourceError(f"unknown Debezium operation {op!r}", file=self.file, line=event.line,
                          hint="expected one of r, c, u, d, t")

    def _from_before(self, values: list, present: list[str], old: list,
                     old_present: list[str] | None) -> list[str] | None:
        """Fill the columns `after` lacks (placeholders) from the event's own `before` where it
        holds a value: an unchanged column's value before the update is its value after it.
        A NULL there is not taken: REPLICA IDENTITY DEFAULT sends key-only before images with
        NULL elsewhere, and a TOAST-ed value is never NULL. Returns the new present list."""
        have = set(present)
        for index, name in enumerate(self.shape.names):
            if name in have or old[index] is None:
                continue
            if old_present is not None and name not in old_present:
                continue
            values[index] = old[index]
            have.add(name)
        return None if len(have) == len(self.shape.names) else [
            n for n in self.shape.names if n in have]

    def _position(self, event: Event) -> tuple[Any, tuple, str]:
        """(Position, phase and position parts, stream) of an event."""
        source = event.envelope.get("source")
        try:
            position = position_of(source if isinstance(source, dict) else None)
        except PositionError as exc:
            raise SourceError(f"bad source position: {exc}", file=self.file, line=event.line,
                              hint="fix the event; its position orders it among the "
                                   "batch's changes") from None
        return position, self._stream.order(position), stream_of(position)

    def _mongo_update(self, event: Event) -> tuple[list, list | None]:
        """A MongoDB update without the full document: the key (pre-image `before`, Kafka key
        or `filter`) plus `updateDescription` (updatedFields set, removedFields NULL) or the 1.x
        `patch` (`$set`/`$unset`, `$v: 2` `diff`, or a whole replacement document)."""
        envelope = event.envelope
        before = envelope.get("before")
        if isinstance(before, str):
            before = self._document(before, event, "before")
        key = before if isinstance(before, dict) else self._key_image(event)
        if key is None or not all(k in key for k in self.shape.key_columns):
            raise SourceError("MongoDB update without the document's key (no 'before', Kafka "
                              "key or 'filter')", file=self.file, line=event.line,
                              hint="keep the Kafka record key in the feed (print.key=true or "
                                   "the {key, value} form)")
        description = envelope.get("updateDescription")
        if isinstance(description, dict):
            updated = description.get("updatedFields")
            sets = self._document(updated, event, "updatedFields") if isinstance(
                updated, str) else dict(updated or {})
            unsets = list(description.get("removedFields") or ())
        else:
            patch = envelope.get("patch")
            try:
                parsed = json.loads(patch) if isinstance(patch, str) else patch
            except json.JSONDecodeError as exc:
                raise SourceError(f"'patch' is not a JSON document: {exc.msg}", file=self.file,
                                  line=event.line) from None
            if not isinstance(parsed, dict):
                raise SourceError("'patch' is not a JSON document", file=self.file,
                                  line=event.line)
            if not any(str(k).startswith("$") for k in parsed):  # a replacement document
                document = {k: self._extended(v, event, "patch") for k, v in parsed.items()}
                document.update({k: key[k] for k in self.shape.key_columns})
                return self._image(document, event, "patch", False)
            sets, unsets = self._patch_operators(parsed, event)
        fields = dict(sets)
        fields.update({name: None for name in unsets})
        columns = set(self.shape.names)
        for name in fields:
            if name not in columns and "." in name and name.split(".", 1)[0] in columns:
                raise SourceError(f"MongoDB update of the nested field {name!r}: the new value "
                                  f"of column {name.split('.', 1)[0]!r} is not in the event",
                                  file=self.file, line=event.line,
                                  hint="set the connector's capture.mode to "
                                       "change_streams_update_full so updates carry the "
                                       "whole document")
        image = {name: key[name] for name in self.shape.key_columns}
        image.update({k: v for k, v in fields.items() if k not in image})
        return self._image(image, event, "updateDescription", True)

    def _patch_operators(self, patch: dict[str, Any], event: Event
                         ) -> tuple[dict[str, Any], list[str]]:
        diff = patch.get("diff")
        if isinstance(diff, dict):  # oplog $v: 2
            nested = [k[1:] for k in diff if k.startswith("s") and k not in ("u", "i", "d")]
            sets = {**(diff.get("u") or {}), **(diff.get("i") or {})}
            sets.update({f"{name}.": None for name in nested})  # nested diffs: refused below
            unsets = list(diff.get("d") or ())
        else:
            sets = dict(patch.get("$set") or {})
            unsets = list(patch.get("$unset") or ())
        return {k: self._extended(v, event, "patch") for k, v in sets.items()}, unsets

    def _need_keys(self, event: Event, what: str) -> None:
        if not self.shape.key_columns:
            raise SourceError(f"{what} event for a table without key columns", file=self.file,
                              line=event.line,
                              hint="declare key_columns for the table (or in source.options)")


RESENT = "resent"  # the skip-count kind of events the delivery checks found re-sent


def parse_text(text: str, file: str, shape: TableShape, options: DebeziumOptions,
               skipped: dict[str, int] | None = None,
               positions: dict[str, int] | None = None,
               marks: Marks | None = None) -> Iterator[Row]:
    """Canonical rows of one Debezium feed file (pure Python). Messages that change no row
    (schema changes, heartbeats, transaction boundaries, re-sent events) are counted by kind
    into `skipped`; `positions` gets the count of events per position stream (see
    `positions`); `marks` are the delivery marks of earlier batches."""
    yield from parse_records(iter_records(text, file), file, shape, options, skipped, positions,
                             marks)


def parse_records(records: Iterable[tuple[int, Any]], file: str, shape: TableShape,
                  options: DebeziumOptions, skipped: dict[str, int] | None = None,
                  positions: dict[str, int] | None = None,
                  marks: Marks | None = None) -> Iterator[Row]:
    """parse_text for (line, record) pairs already decoded (JSON or Avro)."""
    parser = EventParser(shape, options, file, marks)
    counts = skipped if skipped is not None else {}
    for line, raw in records:
        event = to_event(line, raw, file, options.unwrapped)
        if isinstance(event, Control):
            counts[event.kind] = counts.get(event.kind, 0) + 1
        elif event is not None:
            rows = parser.rows(event)
            if not rows and parser.resent:
                counts[RESENT] = counts.get(RESENT, 0) + 1
            for row in rows:
                if positions is not None:
                    stream = row[len(shape.columns) + 1][-1]
                    positions[stream] = positions.get(stream, 0) + 1
                yield row
