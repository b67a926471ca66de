"""Reading mirrored Delta tables without a JVM (delta-rs, the `deltalake` package).

`show`, `history` and the docs site read through here; Spark (`mirrorspec/spark/ops/inspect.py`) is
only the fallback for what delta-rs can't read (`DeltaRsUnsupported`). Imported by commands,
`docsite` and `lint`; imports `progress` and the floors below.
"""
