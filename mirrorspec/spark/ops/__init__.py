"""Operations on mirrored tables. May import `mirror`, `publish` and `platform`.

- `datatests`: the YAML's data tests on the mirrored tables, reported like dbt.
- `reconcile`: a mirrored table against a trusted snapshot of its source, by key.
- `replay`: a mirrored table replayed from the landing files its own commits applied.
- `maintain`: deletion vectors purged, compaction and vacuum of one table.
- `inspect`: row previews and history through Spark (the fallback of `show`/`history`).
- `selftest`: `debug`'s Spark start test (start a session, write and read back a table).
- `warm_up`: a fresh warm Spark server's first pass over a tiny table.
- `cds_training`: the training pass of the driver JVM's class-data archive (drives the
  publisher and the engine).
"""
