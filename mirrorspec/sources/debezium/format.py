"""The `debezium` source format the registry names (`DebeziumFormat`): schema inference from a
local feed's events (compile time, no JVM) or an Avro feed's value schema, the table shape a
compiled table gives the parser, and the parser of each feed encoding (`record_decoder`)."""

from __future__ import annotations

import gzip
from typing import Any, Callable, Iterable, Iterator, Sequence

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import avro_schemas, extended_json
from mirrorspec.sources.base import InferredColumn, InferredSchema, list_feed_files
from mirrorspec.sources.debezium import avro_events
from mirrorspec.sources.debezium.envelope import MONGO_ID, Event, iter_records, row_fields, to_event
from mirrorspec.sources.debezium.options import DebeziumOptions, parse_options
from mirrorspec.sources.debezium.rows import Row, TableShape
from mirrorspec.sources.debezium.types import data_type_for

TYPE_NAME = "debezium"


def read_local_text(file: str) -> str:
    """Text of a local feed file (gzip by extension)."""
    if file.endswith((".gz", ".gzip")):
        with gzip.open(file, "rt", encoding="utf-8") as handle:
            return handle.read()
    with open(file, encoding="utf-8") as handle:
        return handle.read()


def infer_from_events(events: Iterable[tuple[str, Event]], options: DebeziumOptions
                      ) -> InferredSchema | None:
    """Columns from the first event with a value schema; keys from options, else the first Kafka
    key schema (or key object) seen alongside."""
    columns: tuple[InferredColumn, ...] = ()
    origin = ""
    keys = options.key_columns
    documents: dict[str, str] = {}  # MongoDB: the union of the documents' fields, first seen first
    for file, event in events:
        document = _mongo_document(event)
        if document is not None and not columns:
            for name, value in document.items():
                if value is not None and documents.get(name) in (None, "Null"):
                    documents[name] = extended_json.data_type_of(value)
                documents.setdefault(name, "Null")
            origin = origin or f"{file}:{event.line}"
            if not keys and MONGO_ID in document:
                keys = (MONGO_ID,)
            continue
        if not columns:
            fields = row_fields(event.value_schema)
            if fields:
                columns = tuple(
                    InferredColumn(f["field"], data_type_for(f, options.decimal_handling),
                                   bool(f.get("optional", True)))
                    for f in fields if f.get("field"))
                origin = f"{file}:{event.line}"
        if not keys:
            if _is_mongo(event):
                keys = (MONGO_ID,)  # the connector's Kafka key is {"id": <the _id>}
            elif event.key_schema and event.key_schema.get("fields"):
                keys = tuple(f["field"] for f in event.key_schema["fields"] if f.get("field"))
            elif isinstance(event.key, dict) and event.key:
                keys = tuple(event.key)
        if columns and keys:
            break
    if documents and not columns:
        columns = tuple(InferredColumn(name, "String" if kind == "Null" else kind,
                                       name != MONGO_ID) for name, kind in documents.items())
    if not columns and not keys:
        return None
    return InferredSchema(columns=columns, key_columns=tuple(keys), origin=origin)


def _is_mongo(event: Event) -> bool:
    envelope = event.envelope
    source = envelope.get("source") or {}
    return (source.get("connector") == "mongodb" or "updateDescription" in envelope
            or "patch" in envelope or isinstance(envelope.get("after"), str)
            or isinstance(envelope.get("before"), str))


def _mongo_document(event: Event) -> dict[str, Any] | None:
    """The decoded `after` (else `before`) of a MongoDB event (Extended-JSON text), or None."""
    envelope = event.envelope
    for image in (envelope.get("after"), envelope.get("before")):
        if isinstance(image, str):
            try:
                document = extended_json.loads(image)
            except ValueError:  # JSONDecodeError and ExtendedJsonError; the parser names it
                return None
            return document if isinstance(document, dict) else None
    return None


def local_feed_texts(path: str) -> Iterator[tuple[str, str]]:
    """(file, text) of each local feed file under `path`, in order; an unreadable one is a
    SourceError naming it."""
    for file in list_feed_files(path):
        try:
            yield file, read_local_text(file)
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"cannot read feed file: {exc}", file=file) from None


def _local_events(path: str, limit: int = 10_000, unwrapped: bool = False
                  ) -> Iterator[tuple[str, Event]]:
    seen = 0
    for file, text in local_feed_texts(path):
        for line, raw in iter_records(text, file):
            event = to_event(line, raw, file, unwrapped)
            if isinstance(event, Event):
                yield file, event
            seen += 1
            if seen >= limit:
                return


# --- the reader -------------------------------------------------------------------------------

def table_shape(table: Any, extra_keys: Sequence[str] = ()) -> TableShape:
    """The TableShape of a compiled TablePlan (columns without a type read as String)."""
    columns = tuple((c.name, c.type or "String") for c in table.columns)
    if not columns:
        raise SourceError(f"table {table.unique_id} has no columns",
                          hint="declare the columns in the YAML, or let compile infer them "
                               "from the feed")
    keys = tuple(table.key_columns or extra_keys)
    missing = [k for k in keys if k not in {n for n, _ in columns}]
    if missing:
        raise SourceError(f"table {table.unique_id}: key column(s) {', '.join(missing)} "
                          f"are not columns")
    return TableShape(columns, keys)


class DebeziumFormat:
    """`debezium`: Debezium JSON change events."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns from the first event's schema; keys from options or the Kafka key schema.
        An Avro feed's columns come from its `value_schema` file (no registry at compile)."""
        opts = parse_options(options)
        config = avro_schemas.avro_config(options)
        if config is not None:
            if not config.value_schema:
                return None
            schema = avro_schemas.read_schema_file(config.value_schema)
            event = Event(0, {}, schema.connect)
            return infer_from_events([(config.value_schema, event)], opts)
        if "://" in path and not path.startswith("file:"):
            return None  # remote feeds are inferred at run time, not by compile
        return infer_from_events(_local_events(path, unwrapped=opts.unwrapped), opts)

    def resolve_options(self, options: dict[str, Any], project_dir: str) -> dict[str, Any]:
        """`options` with project-relative file names made absolute (the Avro schemas)."""
        return avro_schemas.resolve_paths(options, project_dir)


    def record_decoder(self, options: dict[str, Any]) -> tuple[Callable[..., Iterator[Row]],
                                                               bool] | None:
        """For an Avro feed: (parse(data, file, shape, opts, skipped, positions, marks), whether
        data is the file's bytes); None for JSON (JsonConverter) feeds, read by parse_text."""
        return avro_events.record_decoder(options)
