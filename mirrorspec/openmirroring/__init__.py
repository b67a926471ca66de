"""Fabric open mirroring's rules, in one place (seed 000).

- `mirroring`: landing-zone names and sequence numbers, the row marker, `_metadata.json` keys,
  delimited-text properties and their checks;
- `compression`: compressed delimited landing files (Snappy, GZIP, ZSTD).

Every other room asks these modules; none restates a rule.
"""
