"""Source feed formats (pure Python), one module per format, in one explicit registry.

Each format module holds the format's options, schema inference and the parser Spark workers run;
its Spark reader lives in `mirrorspec/spark/publish/feeds/` (registry `mirrorspec.spark.publish.feeds.READERS`).
`landing_zone` is not a format: it means another publisher writes the landing zone.
On the compile path (compile infers schemas with it): imported by `model` and above, and by the
Spark readers; imports only `plan`, `files`, `mirroring` and the ground floor.

- `base`: the canonical change model every reader produces, the reader interface, feed listing;
- `delivery`: delivery semantics: an event's place in its delivery, the delivery marks;
- `producers`: what each producer may do to its stream and what mirrorspec does with it;
- `reload_runs`: where a full load without a start marker starts again (its runs of reads,
  per Kafka topic-partition);
- `qlik`: Qlik Replicate messages (the format); `qlik_messages`: one message at a time;
  `qlik_columns`: the column-wise Arrow path;
- `arcion`: Arcion Replicant files; `arcion_columns`: its column-wise Arrow path;
  `arrow_columns`: what the column-wise parsers share;
- `debezium`: Debezium change events, JSON or Avro (a package);
- `avro`: Avro's JSON encoding and the Confluent wire format; `avro_schemas`: `.avsc` files and
  the schema registry; `extended_json`: MongoDB Extended JSON;
- `aws_dms`: AWS DMS S3 target files;
- `replicator_positions`: Qlik's changeSequence, Arcion's cursor and DMS's change sequence or
  commit time as source positions;
- `goldengate`, `canal`, `maxwell`: the row-image JSON feeds; `row_images`: what they share;
- `extract`: plain CSV and Parquet extracts;
- `kafka`: `source.kafka`: configuration, offset ranges, staged message files.
"""

from __future__ import annotations

import importlib
from typing import Any

from mirrorspec.sources.base import InferredSchema, SourceFormat

# type name → "module:ClassName"; modules are imported on first use. The one list of feed types:
# FEED_TYPES, SOURCE_TYPES, the Spark readers and the JSON Schema enum follow it (tests check).
REGISTRY: dict[str, str] = {
    "qlik_replicate": "mirrorspec.sources.qlik:QlikReplicateFormat",
    "arcion": "mirrorspec.sources.arcion:ArcionFormat",
    "debezium": "mirrorspec.sources.debezium:DebeziumFormat",
    "aws_dms": "mirrorspec.sources.aws_dms:AwsDmsFormat",
    "csv": "mirrorspec.sources.extract:CsvExtractFormat",
    "parquet": "mirrorspec.sources.extract:ParquetExtractFormat",
    "goldengate": "mirrorspec.sources.goldengate:GoldenGateFormat",
    "canal": "mirrorspec.sources.canal:CanalFormat",
    "maxwell": "mirrorspec.sources.maxwell:MaxwellFormat",
}
FEED_TYPES: tuple[str, ...] = tuple(REGISTRY)
LANDING_ZONE = "landing_zone"
SOURCE_TYPES: tuple[str, ...] = (LANDING_ZONE,) + FEED_TYPES


def load_registered(registry: dict[str, str], source_type: str) -> Any:
    """An instance of the class `registry` names for `source_type` (KeyError if none)."""
    target = registry.get(source_type)
    if target is None:
        raise KeyError(f"no reader for source type {source_type!r}")
    module_name, class_name = target.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name)()


def get_format(source_type: str) -> SourceFormat:
    """The pure format registered for `source_type`."""
    return load_registered(REGISTRY, source_type)


def infer_schema(source_type: str, path: str | None, options: dict[str, Any]) -> InferredSchema | None:
    """What the feed's own metadata says about the table, or None (pure Python, for compile)."""
    if source_type == LANDING_ZONE or not path or source_type not in REGISTRY:
        return None
    return get_format(source_type).infer_schema(path, options)


def resolve_options(source_type: str, options: dict[str, Any], project_dir: str) -> dict[str, Any]:
    """A source's options with the file names its format reads made absolute (relative to the
    project folder); unchanged for formats that name no files."""
    if source_type not in REGISTRY:
        return options
    resolve = getattr(get_format(source_type), "resolve_options", None)
    return resolve(options, project_dir) if resolve is not None else options
