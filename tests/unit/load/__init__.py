"""Unit tests of mirrorspec/load/: YAML, Jinja rendering, schema validation."""
