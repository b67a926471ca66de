"""The one canonical change model every source reader produces, and the reader interface.

A reader turns feed files into a Spark DataFrame of canonical changes with these columns:

- every column of the table (Spark types from the table's DataTypes; see mirroring.DATA_TYPES)
- `_op` (int): 0 insert, 1 update, 2 delete, 4 upsert (the row-marker codes), or
  8 truncate (every row of the table is deleted; the row's other columns are ignored)
- `_order` (any orderable type, structs allowed): the order changes are applied in
- `_present` (array<string> or null): the columns the change carries; null means all of them.
  An absent column is never NULL: the publisher completes it from the current mirrored row.
- `_source_file` (string) and `_source_line` (long): where the change came from, for errors.

Readers split a key change into a delete of the old key followed by an insert of the new one.
Module-level code in `mirrorspec/sources/` must not import pyspark (compile uses the inference
side of readers without a JVM); import it inside the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

OP_INSERT = 0
OP_UPDATE = 1
OP_DELETE = 2
OP_UPSERT = 4
OP_TRUNCATE = 8

OP_COLUMN = "_op"
ORDER_COLUMN = "_order"
PRESENT_COLUMN = "_present"
SOURCE_FILE_COLUMN = "_source_file"
SOURCE_LINE_COLUMN = "_source_line"
CHANGE_COLUMNS = (OP_COLUMN, ORDER_COLUMN, PRESENT_COLUMN, SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN)


@dataclass(frozen=True)
class InferredColumn:
    name: str
    data_type: str  # a SchemaDefinition DataType name (mirroring.DATA_TYPES)
    nullable: bool = True


@dataclass(frozen=True)
class InferredSchema:
    """What a feed's own metadata says about a table (Qlik metadata messages, Debezium schemas)."""

    columns: tuple[InferredColumn, ...] = ()
    key_columns: tuple[str, ...] = ()
    origin: str = ""  # "file:line" the inference came from, for messages


@dataclass(frozen=True)
class ReadResult:
    """A reader's output for one batch of feed files."""

    changes: Any  # pyspark DataFrame of canonical changes
    files: tuple[str, ...] = ()  # the feed files fully consumed by this batch
    held_back: tuple[str, ...] = ()  # files (or tails) waiting for the next run, e.g. open txns
    info: dict[str, Any] = field(default_factory=dict)


class SourceReader(Protocol):
    """A feed format. Implementations are registered in `mirrorspec.sources.REGISTRY`."""

    type_name: str

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns and keys from the feed's own metadata, in pure Python (no JVM); or None."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]) -> ReadResult:
        """Read `files` (already filtered to the new ones) into canonical changes.

        `table` is the compiled TablePlan; `state` is what the publisher remembered for this
        table from earlier runs (reader-specific entries live under state["reader"]).
        """
