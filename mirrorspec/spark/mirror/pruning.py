"""The batch's key range, read from the landing files' Parquet footers, so the MERGE can skip the
table's files whose key statistics lie outside it.

A MERGE condition `t.k = s.k AND t.k BETWEEN lo AND hi` matches exactly the same rows as
`t.k = s.k` when every key of the batch lies in [lo, hi]; the extra, target-only predicate lets
Delta prune data files by their min/max statistics before it joins (Delta's public SQL: it works
over Spark Connect too). It pays off where real mirrors live: new keys appended at the end of the
key space, updates of recent rows. With keys spread over the whole table it prunes nothing and
costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from mirrorspec.base import files as fsmod
from mirrorspec.spark.mirror.batch import col

# Data files of an initial load aim at this size: one huge file can't be skipped or rewritten in
# parts, thousands of tiny ones cost a task and a footer each on every later pass.
TARGET_FILE_BYTES = 128 * 2**20


@dataclass(frozen=True)
class KeyRange:
    """Every key of the batch's first key column lies in [low, high] (integers)."""

    column: str
    low: int
    high: int

    def condition(self, alias: str = "t") -> str:
        """The target-only SQL predicate (column quoted, integer literals)."""
        name = "`" + self.column.replace("`", "``") + "`"
        return f"{alias}.{name} BETWEEN {self.low} AND {self.high}"


def key_range(files, key_columns: tuple[str, ...], table_fields) -> KeyRange | None:
    """The [min, max] of the first key column over the landing `files`, from their row-group
    statistics, or None when it can't be proven cheaply: a key that isn't an integer in the
    table, a file that isn't local Parquet, or a row group without statistics."""
    groups = _row_group_ranges(files, key_columns, table_fields)
    if not groups:
        return None
    return KeyRange(key_columns[0], min(g[0] for g in groups), max(g[1] for g in groups))


def in_key_order(files, key_columns: tuple[str, ...], table_fields) -> bool:
    """Whether `files`, read in order, are already laid out by the first key column: each row
    group's key range starts at or after the previous one's end (an export ordered by its
    primary key, a full load), and no row group is larger than a target file (Spark splits a
    file between row groups, never inside one). Proven from the footers' statistics alone."""
    groups = _row_group_ranges(files, key_columns, table_fields)
    if not groups:
        return False
    return all(size <= TARGET_FILE_BYTES for _, _, size in groups) and all(
        later[0] >= earlier[1] for earlier, later in zip(groups, groups[1:]))


def _row_group_ranges(files, key_columns: tuple[str, ...], table_fields
                      ) -> list[tuple[int, int, int]] | None:
    """(min, max) of the first key column and the compressed size of each row group holding
    keys, in file and row-group order, from the Parquet footers alone; None when a file or row
    group can't say."""
    import pyarrow.parquet as pq

    if not key_columns or not files:
        return None
    key = key_columns[0].lower()
    table_type = next((f.dataType for f in table_fields if f.name.lower() == key), None)
    if not isinstance(table_type, T.IntegralType):
        return None
    ranges: list[tuple[int, int, int]] = []
    for file in files:
        if file.format != "parquet" or fsmod.is_remote(file.path):
            return None
        try:
            metadata = pq.ParquetFile(fsmod.local_path(file.path)).metadata
        except Exception:  # noqa: BLE001 - the read itself reports a bad file
            return None
        names = [metadata.schema.column(i).path.lower() for i in range(metadata.num_columns)]
        if names.count(key) != 1:
            return None
        index = names.index(key)
        if metadata.schema.column(index).physical_type not in ("INT32", "INT64"):
            return None
        for group in range(metadata.num_row_groups):
            column = metadata.row_group(group).column(index)
            stats = column.statistics
            if column.num_values == 0 or (stats is not None and stats.null_count == column.num_values):
                continue  # no key in this row group
            if stats is None or not stats.has_min_max:
                return None
            row_group = metadata.row_group(group)
            size = sum(row_group.column(i).total_compressed_size
                       for i in range(row_group.num_columns))
            ranges.append((int(stats.min), int(stats.max), size))
    return ranges or None


def initial_layout(data: DataFrame, key_columns: tuple[str, ...], landed_bytes: int,
                   in_order: bool = False) -> DataFrame:
    """The rows of an initial load spread into files of about TARGET_FILE_BYTES (estimated from
    the landed files' size), each holding one range of the first key, so that later batches
    whose keys are clustered (new keys, recent rows) touch only the files of their range.

    Rows read `in_order` of the key (see `in_key_order`) are written as read: Spark's splits of
    `spark.sql.files.maxPartitionBytes` (128 MiB) already hold one key range each, so the
    sampling job and the shuffle of the whole table are skipped."""
    if not key_columns or in_order:
        return data  # written as read, in splits of spark.sql.files.maxPartitionBytes
    count = max(1, -(-landed_bytes // TARGET_FILE_BYTES))
    return data.repartitionByRange(count, col(key_columns[0]))
