"""Source feed formats, one module per format, in one explicit registry.

`landing_zone` is not a reader: it means another publisher writes the landing zone.
"""

from __future__ import annotations

import importlib
from typing import Any

from mirrorspec.sources.base import InferredSchema, SourceReader

SOURCE_TYPES = ("landing_zone", "qlik_replicate", "arcion", "debezium", "aws_dms", "csv", "parquet")

# type name → "module:ClassName"; modules are imported on first use.
REGISTRY: dict[str, str] = {
    "qlik_replicate": "mirrorspec.sources.qlik:QlikReplicateReader",
    "arcion": "mirrorspec.sources.arcion:ArcionReader",
    "debezium": "mirrorspec.sources.debezium:DebeziumReader",
    "aws_dms": "mirrorspec.sources.aws_dms:AwsDmsReader",
    "csv": "mirrorspec.sources.extract:CsvExtractReader",
    "parquet": "mirrorspec.sources.extract:ParquetExtractReader",
}


def get_reader(source_type: str) -> SourceReader:
    """The reader registered for `source_type`."""
    target = REGISTRY.get(source_type)
    if target is None:
        raise KeyError(f"no reader for source type {source_type!r}")
    module_name, class_name = target.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name)()


def infer_schema(source_type: str, path: str | None, options: dict[str, Any]) -> InferredSchema | None:
    """What the feed's own metadata says about the table, or None (pure Python, for compile)."""
    if source_type == "landing_zone" or not path or source_type not in REGISTRY:
        return None
    try:
        reader = get_reader(source_type)
    except (ModuleNotFoundError, AttributeError):
        return None
    return reader.infer_schema(path, options)
