"""Spark reader of Canal JSON (the parser is `mirrorspec.sources.canal`)."""

from __future__ import annotations

from typing import Any, Sequence

from mirrorspec.sources.base import ReadResult
from mirrorspec.sources.canal import CanalFormat, parse_text, plan_batch
from mirrorspec.spark.publish.feeds.row_images import read_row_images


class CanalReader(CanalFormat):
    """`canal`: see `mirrorspec.sources.canal`."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """Canonical changes of `files`; raises SourceError naming file and line on bad input."""
        return read_row_images(spark, table, files, parse_text, state, plan_batch)
