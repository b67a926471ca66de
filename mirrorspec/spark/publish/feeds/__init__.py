"""Spark readers of the source feed formats, one module per format, in one explicit registry.

A reader subclasses its pure format (`mirrorspec.sources.<format>`) and adds `read`, which turns
feed files into a DataFrame of canonical changes (see `mirrorspec.sources.base`).

- `base`: what the readers share: Python parsers run in Spark workers, the change schema.
- `row_images`: the reading shared by the row-image JSON feeds (GoldenGate, Canal, Maxwell).
- `qlik`, `arcion`, `aws_dms`, `debezium`, `goldengate`, `canal`, `maxwell`: one reader each,
  over the parser of the same name in `mirrorspec.sources`.
- `extract`: plain extracts (`csv`, `parquet`): the change set between two snapshots.
"""

from __future__ import annotations

from mirrorspec.sources import load_registered
from mirrorspec.sources.base import SourceReader

# type name → "module:ClassName" (the same keys as mirrorspec.sources.REGISTRY; a test checks).
READERS: dict[str, str] = {
    "qlik_replicate": "mirrorspec.spark.publish.feeds.qlik:QlikReplicateReader",
    "arcion": "mirrorspec.spark.publish.feeds.arcion:ArcionReader",
    "debezium": "mirrorspec.spark.publish.feeds.debezium:DebeziumReader",
    "aws_dms": "mirrorspec.spark.publish.feeds.aws_dms:AwsDmsReader",
    "csv": "mirrorspec.spark.publish.feeds.extract:CsvExtractReader",
    "parquet": "mirrorspec.spark.publish.feeds.extract:ParquetExtractReader",
    "goldengate": "mirrorspec.spark.publish.feeds.goldengate:GoldenGateReader",
    "canal": "mirrorspec.spark.publish.feeds.canal:CanalReader",
    "maxwell": "mirrorspec.spark.publish.feeds.maxwell:MaxwellReader",
}


def get_reader(source_type: str) -> SourceReader:
    """The Spark reader registered for `source_type` (KeyError if none)."""
    return load_registered(READERS, source_type)
