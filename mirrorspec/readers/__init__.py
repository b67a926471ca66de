"""Reading mirrored Delta tables without a JVM (delta-rs, the `deltalake` package).

`show`, `history` and the docs site read through here; Spark (`mirrorspec/spark/ops/inspect.py`) is
only the fallback for what delta-rs can't read (`DeltaRsUnsupported`). Imported by commands,
`docsite` and `lint`; imports `progress` and the floors below.

- `delta`: rows and history of a Delta table through delta-rs; `sql`: `--where` for DataFusion;
- `history`: one commit as `history` shows it; `changes`: a table's change data feed;
- `storage`: delta-rs storage options from the profile's Spark conf;
- `errors`: the read path's errors (`DeltaRsUnsupported`);
- `compat`: which readers open a table, and why the others refuse it;
- `export`: `mirrorspec export`, a table to one Parquet or CSV file.
"""
