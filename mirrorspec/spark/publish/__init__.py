"""Feed → landing zone. Imports `platform` only; never `mirror`.

- `publisher`: new feed files → canonical changes → one Parquet landing file per batch,
  numbered and renamed into place.
- `replays`: idempotent replays, the Spark side of `mirrorspec.sources.delivery` (re-sent
  changes dropped by their source position).
- `completion`: partial rows completed from the mirrored table; truncates expanded.
- `reloads`: a feed's full load sent again replaces the table (a truncate before a new load).
- `replace`: a whole-table replacement (truncate, then reload) of a table without keys.
- `refresh`: `run --full-refresh` of a feed table: the feed published aside, then swapped in.
- `kafka`: Kafka topics → staged feed files between recorded offsets.
- `python_daemon`: PySpark's Python worker daemon started warm, the parsers imported once.
- `feeds/`: the Spark reader of each feed format.
"""
