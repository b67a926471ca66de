"""Unit tests of mirrorspec/observe/: OpenLineage and the metrics samples."""
