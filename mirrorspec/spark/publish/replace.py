"""A whole-table replacement (a truncate then a reload) of a table without key columns.

The landing zone can only add rows to a table without keyColumns (the landing-zone specification:
markers 1/2/4 need keys), so a truncate of such a table can't be written as it stands. What can be
written is the difference: once the rows the table will hold are known — the mirrored Delta rows
plus the rows of landing files published but not yet mirrored — and each of them is also among the
rows that follow the last truncate of the batch, landing only the rows those lack makes the table
equal to the reload (a Maxwell bootstrap run again, a DTS initial load run again). If the table
holds a row the reload lacks, or what it holds can't be known (its landing files were consumed by
another mirror), nothing can say it: the table stops at the truncate with a located error.
"""

from __future__ import annotations

from typing import Any, Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from mirrorspec.base.errors import SourceError
from mirrorspec.base.files import FileSystem, join
from mirrorspec.landing.layout import list_folder, read_metadata
from mirrorspec.openmirroring.mirroring import METADATA_FILE, mirror_id
from mirrorspec.progress.mirror import read_state
from mirrorspec.sources.base import (OP_COLUMN, OP_TRUNCATE, ORDER_COLUMN, SOURCE_FILE_COLUMN,
                                     SOURCE_LINE_COLUMN)
from mirrorspec.spark.platform.hadoop_fs import filesystem_for
from mirrorspec.spark.publish.completion import read_mirrored

_COUNT = "__held"
_RANK = "__rank"
HINT = ("the landing zone can only add rows to a table without key columns: declare the "
        "table's key_columns (the source table's primary key), or rebuild the table from a feed "
        "that starts with the reload (`mirrorspec run --full-refresh --select <table>` after "
        "removing the older feed files)")


def after(order: Any, file: str, line: int):
    """True for change rows after the change at (`order`, `file`, `line`) in the batch's order:
    `_order`'s fields, then file and line, NULLs first (as the landing file's sort puts them)."""
    fields = [(F.col(f"{ORDER_COLUMN}.{name}"), value)
              for name, value in zip(order.__fields__, order)]
    fields += [(F.col(SOURCE_FILE_COLUMN), file), (F.col(SOURCE_LINE_COLUMN), line)]
    result = F.lit(False)
    for column, value in reversed(fields):
        if value is None:
            greater, equal = column.isNotNull(), column.isNull()
        else:
            greater = column.isNotNull() & (column > F.lit(value))
            equal = column.isNotNull() & (column == F.lit(value))
        result = greater | (equal & result)
    return result


def held_rows(spark, table: Any, columns: Sequence[str], fs: FileSystem | None = None
              ) -> DataFrame | None:
    """The rows the mirrored table holds once the published landing files are applied: the
    Delta table's rows plus those of the landing files after its last applied sequence. None
    when nothing was mirrored or published; SourceError when a published file is gone from the
    landing folder and the Delta table doesn't hold it (another mirror consumed it)."""
    fs = fs or filesystem_for(table.landing_path, spark)
    mirrored = read_mirrored(spark, table.delta_path)
    applied = 0
    if mirrored is not None:
        record = read_state(filesystem_for(table.delta_path, spark), table.delta_path,
                            mirror_id(table.schema, table.name)).record
        applied = int(record.sequence or 0) if record is not None else 0
    pending = []
    if fs.exists(join(table.landing_path, METADATA_FILE)):
        metadata = read_metadata(fs, table.landing_path)
        listing = list_folder(fs, table.landing_path, metadata)
        numbered = {f.sequence: f for f in listing.files if f.sequence is not None}
        last = max(numbered, default=0)
        missing = [s for s in range(applied + 1, last + 1) if s not in numbered]
        if missing:
            raise SourceError(
                f"landing file {missing[0]:020d} is neither in the landing folder nor in the "
                f"mirrored table at {table.delta_path}, so the rows the table holds can't be "
                "known", file=table.landing_path, hint=HINT)
        pending = [numbered[s].path for s in range(applied + 1, last + 1)]
    frames = []
    if mirrored is not None:
        frames.append(mirrored)
    if pending:
        frames.append(spark.read.parquet(*pending))
    held = None
    for frame in frames:
        have = set(frame.columns)
        rows = frame.select(*[(F.col(c) if c in have else F.lit(None)).alias(c) for c in columns])
        held = rows if held is None else held.unionByName(rows)
    return held


def replace_keyless(spark, changes: DataFrame, table: Any, columns: Sequence[str]
                    ) -> DataFrame:
    """`changes` of a table without key columns whose batch holds truncates, as rows the
    landing zone can take (see the module docstring); raises SourceError located at the last
    truncate when the table holds a row the reload lacks."""
    truncates = (changes.where(F.col(OP_COLUMN) == OP_TRUNCATE)
                 .select(ORDER_COLUMN, SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN).collect())
    if not truncates:
        return changes
    last = max(truncates, key=lambda r: (tuple((v is not None, v) for v in r[0]), r[1], r[2]))
    order, file, line = last[0], last[1], last[2]
    reload = changes.where(after(order, file, line) & (F.col(OP_COLUMN) != OP_TRUNCATE))
    held = held_rows(spark, table, columns)
    if held is None:
        return reload
    held = held.select(*[F.col(c).cast(changes.schema[c].dataType).alias(c) for c in columns])
    extra = held.exceptAll(reload.select(*columns)).limit(1).collect()
    if extra:
        shown = ", ".join(f"{c}={v!r}" for c, v in zip(columns, extra[0]))
        raise SourceError(f"the table is replaced here, but it holds a row the reload doesn't "
                          f"({shown}) and a table without key columns can't delete rows",
                          file=file, line=line, hint=HINT)
    counts = held.groupBy(*columns).agg(F.count(F.lit(1)).alias(_COUNT))
    ranked = reload.withColumn(_RANK, F.row_number().over(
        Window.partitionBy(*columns).orderBy(ORDER_COLUMN, SOURCE_FILE_COLUMN,
                                             SOURCE_LINE_COLUMN)))
    matched = ranked.join(counts, [ranked[c].eqNullSafe(counts[c]) for c in columns], "left")
    kept = matched.where(F.col(_COUNT).isNull() | (F.col(_RANK) > F.col(_COUNT)))
    return kept.select(*[ranked[c] for c in changes.columns])
