"""A plan's table as `diff` compares it: its folder, its `_metadata.json` as the engine reads it,
keys, columns and types, the delimited dialect, the source; values shown for people."""

from __future__ import annotations

from typing import Any

from mirrorspec.artifacts.plan import ColumnSpec, TablePlan
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.openmirroring.mirroring import (
    DELIMITED_PROPERTIES,
    FILE_DETECTION_LAST_UPDATE_TIME,
    FILE_DETECTION_SEQUENTIAL,
    FILE_FORMAT_CSV,
    TableMetadata,
    canonical_data_type,
    parse_metadata,
    table_folder,
)


# --- normalising ---------------------------------------------------------------------------

def folder_of(table: TablePlan) -> str:
    """The table's landing folder."""
    return table_folder(table.name, table.schema)


def metadata_of(table: TablePlan) -> TableMetadata:
    """The `_metadata.json` as the engine reads it (mirroring.parse_metadata, defaults filled
    in); the defaults when it doesn't parse (compile never writes such a file)."""
    try:
        return parse_metadata(table.metadata or {}, file=f"{folder_of(table)}/_metadata.json")
    except LandingZoneError:
        return TableMetadata()


def keys_of(table: TablePlan) -> list[str]:
    """The table's key columns: the plan's, else its `_metadata.json`'s."""
    if table.key_columns:
        return list(table.key_columns)
    return list(metadata_of(table).key_columns)


def columns_of(table: TablePlan, metadata: TableMetadata) -> list[ColumnSpec]:
    """The table's declared columns: the plan's, else its `_metadata.json`'s."""
    if table.columns:
        return list(table.columns)
    if metadata.columns:
        return [ColumnSpec(c.name, c.data_type, c.nullable is not False) for c in metadata.columns]
    return []


def type_of(column: ColumnSpec) -> str | None:
    """The column's DataType, canonical when it is one."""
    if column.type is None:
        return None
    return canonical_data_type(column.type) or str(column.type)


def nullability_of(column: ColumnSpec) -> str:
    """'nullable' or 'not null', for people."""
    return "nullable" if column.nullable else "not null"


def dialect_of(table: TablePlan) -> dict[str, Any]:
    """What decides how a table's files are read: the published format, and for delimited
    tables FileFormat, FileExtension and every FileFormatTypeProperty (defaults filled in)."""
    dialect: dict[str, Any] = {"file_format": table.file_format}
    declared = {str(k).lower() for k in (table.metadata or {})}
    if table.file_format == "parquet" and "fileformat" not in declared:
        return dialect
    metadata = metadata_of(table)
    dialect["FileFormat"] = metadata.file_format
    extension = metadata.file_extension.lower() if metadata.file_extension else None
    if extension is None and metadata.file_format == FILE_FORMAT_CSV:
        extension = "csv"  # CSV files are recognised by their .csv name anyway
    dialect["FileExtension"] = extension
    for name in DELIMITED_PROPERTIES:
        dialect[f"FileFormatTypeProperties.{name}"] = getattr(metadata.delimited,
                                                              _snake_case(name))
    return dialect


def _snake_case(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def detection_of(metadata: TableMetadata) -> str:
    """The file detection strategy the metadata says."""
    return (FILE_DETECTION_LAST_UPDATE_TIME if metadata.last_update_time_detection
            else FILE_DETECTION_SEQUENTIAL)


def source_label(table: TablePlan) -> str:
    """The table's source for people: its type, and a Kafka source's topics."""
    kafka = kafka_identity(table)
    if kafka is None:
        return table.source.type
    servers, topics, pattern, metadata = kafka
    what = ", ".join(topics) if topics else f"pattern {pattern}"
    return f"{table.source.type} from Kafka {servers}: {what}" + (
        f" (metadata {metadata})" if metadata else "")


def kafka_identity(table: TablePlan) -> tuple[Any, ...] | None:
    """What makes a Kafka source another feed: servers, topics or pattern, metadata topic."""
    kafka = getattr(table.source, "kafka", None)
    if not kafka:
        return None
    return (str(kafka.get("bootstrap_servers", "")), tuple(kafka.get("topics") or ()),
            kafka.get("topic_pattern"), kafka.get("metadata_topic"))


def union_keys(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The keys of `a`, then those of `b` not in `a`."""
    return list(a) + [k for k in b if k not in a]


def show(value: Any) -> str:
    """A value for people (∅ for None, lists in brackets, odd strings quoted)."""
    if value is None:
        return "∅"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value) if value == "" or value != value.strip() or \
            any(ch in value for ch in "\r\n\t") else value
    return str(value).lower() if isinstance(value, bool) else str(value)
