"""Fabric open mirroring's rules, in one place (Microsoft's "Open mirroring landing zone
requirements and format").

- `mirroring`: landing-zone names and sequence numbers, the row marker, `_metadata.json` keys,
  delimited-text properties and their checks;
- `compression`: compressed delimited landing files (Snappy, GZIP, ZSTD);
- `parquet_types`: how the engine types a Parquet landing file's columns.

Every other room asks these modules; none restates a rule.
"""
