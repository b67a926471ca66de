"""Debezium JSON change events → canonical changes (`source: {type: debezium}`).

One event per line (NDJSON), pretty-printed/concatenated objects, or a JSON array per file. An
event is the Debezium envelope (`before`, `after`, `source`, `op`, `ts_ms`), with or without the
JsonConverter `{schema, payload}` wrapper, optionally inside a Kafka record `{key, value}`.

- Operations: `op` r/c → insert (0), u → update (1), d → delete (2, key from `before`),
  t → truncate (8); `m` (logical decoding messages) and tombstones (`null` values) are skipped.
- An update whose key differs between `before` and `after` → delete of the old key, then insert.
- Placeholders: `__debezium_unavailable_value` (Postgres TOAST, Oracle LOB) → the column is
  absent (`_present`), never the literal.
- Order: each connector's documented source position (`positions`), snapshot events first; ties
  by feed file and line. A position going backwards within a file is an error.

Options (`source.options`): `key_columns`, `decimal_handling` (double | string), `time_unit`
(ms | us | ns, for integer timestamps without a schema), `unavailable_value_placeholder`,
`table` (keep only events whose `source.table` — or `schema.table` — matches), `unwrapped`,
`avro` (Avro-encoded events: `avro_events`, `mirrorspec.sources.avro`, `avro_schemas`). Avro
JSON union wrappers found without an `avro` block are removed by their shape.

This package is the pure parser (compile infers schemas with it; Spark workers run it); the
Spark reader is `mirrorspec.spark.publish.feeds.debezium`. Its modules:

- `options`: `DebeziumOptions`, `parse_options`;
- `envelope`: a message → its `Event` (or a `Control` that changes no row), unwrapped rows,
  the records of a feed file;
- `types`: Kafka Connect types → DataTypes; values decoded by their schema and coerced;
- `placeholders`: the "unchanged, not sent" placeholder in every form a connector sends it;
- `positions`: each connector's source position, the one home of Debezium order;
- `rows`: events → canonical rows (`TableShape`, `Row`, `EventParser`, `parse_text`);
- `avro_events`: the parser of each Avro encoding;
- `format`: `DebeziumFormat` (schema inference, `table_shape`).
"""

from mirrorspec.sources.debezium.envelope import (MONGO_ID, Control, Event, iter_records,
                                                  row_fields, to_event, unwrapped_envelope)
from mirrorspec.sources.debezium.format import (TYPE_NAME, DebeziumFormat, infer_from_events,
                                                local_feed_texts, read_local_text, table_shape)
from mirrorspec.sources.debezium.options import DebeziumOptions, parse_options
from mirrorspec.sources.debezium.rows import (RESENT, EventParser, Row, TableShape, parse_records,
                                              parse_text)
from mirrorspec.sources.debezium.types import (coerce, data_type_for, decode, is_unavailable,
                                               parse_date, parse_timestamp)

__all__ = ["MONGO_ID", "RESENT", "TYPE_NAME", "Control", "DebeziumFormat", "DebeziumOptions",
           "Event", "EventParser", "Row", "TableShape", "coerce", "data_type_for", "decode",
           "infer_from_events", "is_unavailable", "iter_records", "local_feed_texts",
           "parse_date", "parse_options", "parse_records", "parse_text", "parse_timestamp",
           "read_local_text", "row_fields", "table_shape", "to_event", "unwrapped_envelope"]
