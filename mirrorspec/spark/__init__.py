"""Everything that imports pyspark lives in this package; only `run`/`mirror` import it."""
