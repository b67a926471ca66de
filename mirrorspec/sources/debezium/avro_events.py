"""Debezium events encoded in Avro (`source.options.avro`): the parser of each encoding —
Avro container files, the Confluent wire format (schemas from a registry or `.avsc` files) and
kafka-avro-console-consumer dumps in Avro's JSON encoding. Decoding lives in
`mirrorspec.sources.avro_schemas`; the rows come from `rows.parse_records`."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from mirrorspec.sources import avro_schemas
from mirrorspec.sources.debezium.envelope import iter_records
from mirrorspec.sources.debezium.options import DebeziumOptions
from mirrorspec.sources.debezium.rows import Row, TableShape, parse_records
from mirrorspec.sources.delivery import Marks


def record_decoder(options: dict[str, Any]) -> tuple[Callable[..., Iterator[Row]], bool] | None:
    """For an Avro feed: (parse(data, file, shape, opts, skipped, positions, marks), whether
    data is the file's bytes); None for JSON (JsonConverter) feeds, read by parse_text."""
    config = avro_schemas.avro_config(options)
    if config is None:
        return None
    if config.encoding == avro_schemas.CONTAINER:
        def parse_container(data: bytes, file: str, shape: TableShape,
                            opts: DebeziumOptions, skipped: dict[str, int] | None = None,
                            positions: dict[str, int] | None = None,
                            marks: Marks | None = None) -> Iterator[Row]:
            yield from parse_records(avro_schemas.container_records(data, file), file,
                                     shape, opts, skipped, positions, marks)
        return parse_container, True
    if config.encoding == avro_schemas.CONFLUENT:
        lookup = avro_schemas.SchemaLookup(config)

        def parse_wire(data: bytes, file: str, shape: TableShape, opts: DebeziumOptions,
                       skipped: dict[str, int] | None = None,
                       positions: dict[str, int] | None = None,
                       marks: Marks | None = None) -> Iterator[Row]:
            yield from parse_records(avro_schemas.wire_records(data, file, lookup), file,
                                     shape, opts, skipped, positions, marks)
        return parse_wire, True
    value_schema = (avro_schemas.read_schema_file(config.value_schema)
                    if config.value_schema else None)

    def parse_json(text: str, file: str, shape: TableShape, opts: DebeziumOptions,
                   skipped: dict[str, int] | None = None,
                   positions: dict[str, int] | None = None,
                   marks: Marks | None = None) -> Iterator[Row]:
        records = avro_schemas.json_records(iter_records(text, file), file, value_schema)
        yield from parse_records(records, file, shape, opts, skipped, positions, marks)
    return parse_json, False

