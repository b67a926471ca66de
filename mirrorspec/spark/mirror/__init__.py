"""Landing zone → Delta tables, exactly once. Imports `platform` only; never `publish`.

- `engine`: the pass: discover the tables, drop deleted ones, run the tables on threads, write
  the monitoring JSON; the names callers use (`mirror_landing_zone`, `mirror_tables`, …);
- `targets`: `MirrorOptions`, `MirrorTarget`, `TableOutcome`: what a pass is given and reports;
- `table_run`: `TableRun`, one table's exactly-once protocol; per-table sessions; error codes;
- `commit`: the table run's one Delta commit (`CheckedBatch`, `DeltaCommit`);
- `batch`: a batch of landing files read as one DataFrame;
- `fold`: changes → one MERGE source; the MERGE;
- `pruning`: the batch's key range (from the files' footers) so the MERGE skips files;
- `staged_source`: the MERGE source staged as Parquet beside its table (a Bloom filter);
- `decompressed`: Snappy-compressed delimited files, decompressed beside the table;
- `warm`: a watched table's Delta snapshot kept warm between `--watch` passes.
"""
