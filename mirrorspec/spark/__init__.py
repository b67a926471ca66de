"""Everything that needs a SparkSession, and the only package that imports pyspark or delta.

Four wings, each importing only the ones below it (held by `make lint`):

- `run`       the runner: `plan.json` → per table, publish then mirror; `run_results.json`.
- `ops`       operations on mirrored tables: data tests, reconcile, replay, maintain, the Spark
              fallback of show/history, the class-data archive's training pass.
- `publish`   feed → one landing file per batch: the publisher, partial-row completion, Kafka
              offsets → staged feed files, the Spark reader of each feed format (`publish/feeds/`).
- `mirror`    landing zone → Delta, exactly once: the engine's passes and per-table protocol,
              batch reading, the fold, MERGE pruning, staging, decompression, warm snapshots.
- `platform`  Spark and Delta access: the session, jars, the JVM class-data archive, Hadoop's
              FileSystem, Delta statements.

Only `mirrorspec.commands` import this package, lazily inside a command. What the run half keeps
on disk without needing Spark (landing folders, progress records, files) lives below the JVM line:
`mirrorspec.base.files`, `mirrorspec.landing`, `mirrorspec.progress`.
"""
