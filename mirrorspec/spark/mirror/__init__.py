"""Landing zone → Delta tables, exactly once: `engine` (passes and the per-table protocol),
`batch` (a batch of landing files read as one DataFrame), `fold` (changes → one MERGE),
`pruning`, `staged_source`, `decompressed`, `warm`. Imports `platform` only; never `publish`."""
