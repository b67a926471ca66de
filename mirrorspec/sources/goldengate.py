"""Oracle GoldenGate for Big Data JSON → canonical changes (`source: {type: goldengate}`).

The JSON formatter's messages, one per operation: `table` ("SCHEMA.TABLE"), `op_type`, `op_ts`,
`current_ts`, `pos`, optionally `primary_keys` and `tokens`, and the row either as `before`/`after`
objects (operation modeled, the default) or as top-level fields (row modeled).

- `op_type` I → insert (0) of `after`; U → update (1) of `after` (a compressed update carries only
  some columns: the others are absent, completed from the current row); before/after with
  different keys → delete of the old key + insert of `before` overlaid with `after`; D → delete
  (2) of `before`'s key; T → truncate (8). Anything else stops the table.
- Order: `pos` (trail sequence number + RBA, zero-padded digits: compared as numbers), then feed
  file and line.
- Delivery (`delivery_of`): `pos` names one operation of the trail, so a message at a `pos` the
  file (or an earlier batch) already sent is a re-send: dropped when it equals the first copy
  (`row_images.DeliveryGate`); the Kafka handler re-sends what followed the Replicat's last
  checkpoint after a restart.

Options: `key_columns`, `table`. The Spark reader is `mirrorspec.spark.publish.feeds.goldengate`.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (OP_DELETE, OP_INSERT, OP_UPDATE,
                                     InferredSchema, iter_json_documents)
from mirrorspec.sources.debezium import Row, TableShape
from mirrorspec.sources.delivery import Marks
from mirrorspec.sources.row_images import (DeliveryGate, ImageReader, Note, RowImageOptions,
                                           TableRouter, borrow_positions, change_row,
                                           digit_position, infer_from_images, key_change_rows,
                                           table_name_matches, truncate_row)

TYPE_NAME = "goldengate"
# The formatter's metadata fields; in a row-modeled message every other field is a column.
META_FIELDS = frozenset(("table", "op_type", "op_ts", "current_ts", "pos", "primary_keys",
                         "tokens", "txid", "csn", "xid"))
OP_TYPES = ("I", "U", "D", "T")
# GoldenGate's own date-time text puts a colon between date and time: 1994-09-30:15:33:00
_GG_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2}):(\d{2}:\d{2})")
_POSITION_WIDTH = 40


def position_key(pos: Any) -> str:
    """`pos` as a string that sorts like the position: digits left-padded with zeros (the
    producer zero-pads to a fixed width; padding makes widths agree), anything else as written."""
    text = str(pos).strip()
    return text.zfill(_POSITION_WIDTH) if text.isdigit() else text


def delivery_of(pos: Any) -> tuple[int, ...] | None:
    """The delivery position of a message's `pos` (`delivery.Delivery.position`): the digits as
    two integers compared as the whole number is (a 20-digit `pos` may exceed 64 bits), None
    when the message has no `pos` or one that is not digits (it then sorts as written)."""
    if pos is None:
        return None
    try:
        return digit_position(str(pos).strip())
    except ValueError:
        return None


def _prepare(value: Any, data_type: str) -> Any:
    if data_type in ("DateTime", "IDate") and isinstance(value, str):
        return _GG_DATETIME.sub(r"\1 \2", value, count=1)
    return value


def images(message: dict[str, Any]) -> tuple[Any, Any, bool]:
    """(before, after, operation_modeled) of a message. Row modeled: the top-level columns are
    the after image (the before image of a delete)."""
    if "before" in message or "after" in message:
        return message.get("before"), message.get("after"), True
    row = {k: v for k, v in message.items() if k not in META_FIELDS}
    if message.get("op_type") == "D":
        return row, None, False
    return None, row, False


def parse_text(text: str, file: str, shape: TableShape, options: RowImageOptions,
               skipped: dict[str, int] | None = None, notes: list[Note] | None = None,
               marks: Marks | None = None) -> Iterator[Row]:
    """Canonical rows of one GoldenGate JSON file (pure Python), each ending with its
    `_delivery` value; re-sent messages (`marks`: the delivery marks of earlier batches) are
    counted in `skipped`; the file's greatest `pos` noted in `notes`."""
    rows = _parse(text, file, shape, options, skipped, notes, marks)
    return borrow_positions(rows, len(shape.columns), file, notes)


def _parse(text: str, file: str, shape: TableShape, options: RowImageOptions,
           skipped: dict[str, int] | None, notes: list[Note] | None,
           marks: Marks | None) -> Iterator[Row]:
    reader = ImageReader(shape, file, _prepare)
    router = TableRouter(options.table, file, "GoldenGate")
    gate = DeliveryGate(TYPE_NAME, shape, file, marks, skipped, options.repeats_land)
    for line, message in iter_json_documents(text, file):
        if not isinstance(message, dict) or "op_type" not in message:
            found = ", ".join(list(message)[:8]) if isinstance(message, dict) else \
                type(message).__name__
            raise SourceError(f"not a GoldenGate JSON message (no 'op_type'; found {found})",
                              file=file, line=line,
                              hint="point the source at the JSON formatter's output only")
        if not router.keeps(str(message.get("table") or ""), line):
            continue
        position = None
        if message.get("pos") is not None:
            position = position_key(message["pos"])
        # `pos` (trail sequence number and RBA) names one operation
        yield from gate.admit(_rows(reader, message, position, file, line, notes), "",
                              delivery_of(message.get("pos")), True, line)


def _rows(reader: ImageReader, message: dict[str, Any], position: str | None, file: str,
          line: int, notes: list[Note] | None = None) -> list[Row]:
    op = message["op_type"]
    before, after, _ = images(message)
    if op == "I":
        values, present = reader.values(after, line, "after", False)
        return [change_row(values, OP_INSERT, position, file, line, 0, present)]
    if op == "U":
        reader.need_keys(line, "update")
        if not isinstance(after, dict):
            raise SourceError("update without an 'after' image", file=file, line=line)
        # A compressed after image lacks the columns the update left unchanged (the key too,
        # sometimes): where the message's own before image has them, that is their value.
        image = {**before, **after} if isinstance(before, dict) else dict(after)
        values, present = reader.values(image, line, "after", True)
        if reader.has_keys(before):
            old, _ = reader.values(before, line, "before", True)
            changed = key_change_rows(reader, old, values, present, position, file, line, 0,
                                      "log full before images of updates (GETUPDATEBEFORES, "
                                      "NOCOMPRESSUPDATES) for tables whose keys change")
            if changed:
                return changed
        if not reader.has_keys(image):
            raise SourceError("update without the key columns in 'after' or 'before'",
                              file=file, line=line,
                              hint="configure the GoldenGate extract to log the key columns "
                                   "(ADD TRANDATA / KEYCOLS)")
        return [change_row(values, OP_UPDATE, position, file, line, 0, present)]
    if op == "D":
        reader.need_keys(line, "delete")
        if not reader.has_keys(before):
            raise SourceError("delete without the key columns in 'before'", file=file, line=line,
                              hint="configure the GoldenGate extract to log the key columns")
        values, _ = reader.values(before, line, "before", True)
        return [change_row(values, OP_DELETE, position, file, line, 0, None)]
    if op == "T":
        return [truncate_row(len(reader.shape.columns), position, file, line, 0, notes)]
    raise SourceError(f"unknown GoldenGate op_type {op!r}", file=file, line=line,
                      hint=f"expected one of {', '.join(OP_TYPES)} (the formatter's default "
                           "insertOpKey/updateOpKey/deleteOpKey/truncateOpKey)")


def _inference_images(message: dict[str, Any], options: RowImageOptions
                      ) -> tuple[list[dict[str, Any]], Any] | None:
    """A message's non-empty row images (after, then before) and its `primary_keys`."""
    if not table_name_matches(options, str(message.get("table") or "")):
        return None
    before, after, _ = images(message)
    found = [image for image in (after, before) if isinstance(image, dict) and image]
    return found, message.get("primary_keys")


class GoldenGateFormat:
    """`goldengate`: Oracle GoldenGate for Big Data JSON formatter messages."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns from the row images' JSON values; keys from `primary_keys`."""
        return infer_from_images(path, options, _inference_images)
