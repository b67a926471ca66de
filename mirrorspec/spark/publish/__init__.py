"""Feed → landing zone: `publisher` (one Parquet landing file per batch, numbered and renamed
into place), `completion` (partial rows completed from the mirrored table), `kafka` (topics →
staged feed files between recorded offsets) and `feeds/` (the Spark reader of each format).
Imports `platform` only; never `mirror`."""
