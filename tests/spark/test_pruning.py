"""The batch's key range from Parquet footers, the MERGE condition that lets Delta skip files by
it, and the initial load's layout (files of one key range each)."""

from __future__ import annotations

import glob
import itertools
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T

from mirrorspec.openmirroring.mirroring import sequence_file_name
from mirrorspec.spark.mirror import engine, fold, pruning
from mirrorspec.landing.layout import LandingFile

M = "__rowMarker__"
LONG_ID = [T.StructField("id", T.LongType())]


def _file(folder, seq, table, **options) -> LandingFile:
    path = os.path.join(folder, sequence_file_name(seq))
    pq.write_table(table, path, **options)
    return LandingFile(name=os.path.basename(path), path=path, size=os.path.getsize(path),
                       mtime=0.0, sequence=seq, format="parquet")


def test_key_range_spans_every_row_group_of_every_file(tmp_path):
    first = _file(tmp_path, 1, pa.table({"ID": [50, 7, None, 12], M: [1, 1, 0, 2]}),
                  row_group_size=2)
    second = _file(tmp_path, 2, pa.table({"ID": [400, 90], M: [0, 4]}))
    bounds = pruning.key_range([first, second], ("id",), LONG_ID)
    assert (bounds.column, bounds.low, bounds.high) == ("id", 7, 400)
    assert bounds.condition() == "t.`id` BETWEEN 7 AND 400"


def test_no_range_without_statistics_or_for_a_non_integer_key(tmp_path):
    no_stats = _file(tmp_path, 1, pa.table({"id": [1, 2], M: [1, 1]}), write_statistics=False)
    assert pruning.key_range([no_stats], ("id",), LONG_ID) is None
    texts = _file(tmp_path, 2, pa.table({"id": ["a", "b"], M: [1, 1]}))
    assert pruning.key_range([texts], ("id",), [T.StructField("id", T.StringType())]) is None
    assert pruning.key_range([texts], (), LONG_ID) is None


def test_rows_in_key_order_are_proven_from_row_group_statistics(tmp_path):
    ordered = [_file(tmp_path, 1, pa.table({"id": [1, 2, 3, 4], M: [0] * 4}), row_group_size=2),
               _file(tmp_path, 2, pa.table({"id": [4, 9], M: [0, 0]}))]
    assert pruning.in_key_order(ordered, ("id",), LONG_ID)
    overlapping = _file(tmp_path, 3, pa.table({"id": [1, 5, 3, 8], M: [0] * 4}), row_group_size=2)
    assert not pruning.in_key_order([overlapping], ("id",), LONG_ID)
    assert not pruning.in_key_order([*ordered, overlapping], ("id",), LONG_ID)
    no_stats = _file(tmp_path, 4, pa.table({"id": [1, 2], M: [0, 0]}), write_statistics=False)
    assert not pruning.in_key_order([no_stats], ("id",), LONG_ID)


def test_merge_condition_carries_the_target_only_range():
    assert fold.merge_condition(["id"], "t.`id` BETWEEN 1 AND 9") == \
        "t.`id` = s.`id` AND s.__is_reset AND t.`id` BETWEEN 1 AND 9"


def _commits(table):
    for path in sorted(glob.glob(os.path.join(table, "_delta_log", "*.json"))):
        with open(path) as handle:
            yield [json.loads(line) for line in handle if line.strip()]


def _file_ranges(table) -> list[tuple[int, int]]:
    return sorted((s["minValues"]["id"], s["maxValues"]["id"]) for commit in _commits(table)
                  for a in commit if "add" in a for s in [json.loads(a["add"]["stats"])])


def test_an_initial_load_in_key_order_is_written_as_read(spark, tmp_path, monkeypatch):
    # row groups of ~10.6 KiB, 33 KiB in all: three files if it were shuffled into ranges
    monkeypatch.setattr(pruning, "TARGET_FILE_BYTES", 12 * 1024)
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    folder = landing / "t"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    ids = list(range(3000))
    pq.write_table(pa.table({"id": ids, "v": [f"v{i}" for i in ids], M: [0] * 3000}),
                   folder / sequence_file_name(1), row_group_size=1000)
    assert not engine.mirror_landing_zone(spark, str(landing), str(warehouse)).failed
    table = str(warehouse / "dbo" / "t")
    # no shuffle into 12 KiB ranges: one split of the (small) landed file, one Delta file
    assert _file_ranges(table) == [(0, 2999)]
    assert spark.read.format("delta").load(table).count() == 3000


def test_initial_load_is_range_laid_and_a_pruned_merge_stays_exact(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(pruning, "TARGET_FILE_BYTES", 4096)
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    folder = landing / "t"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    ids = [(i * 7919) % 3000 for i in range(3000)]  # every key once, out of order
    pq.write_table(pa.table({"id": ids, "v": [f"v{i}" for i in ids], M: [0] * 3000}),
                   folder / sequence_file_name(1))
    assert not engine.mirror_landing_zone(spark, str(landing), str(warehouse)).failed
    table = str(warehouse / "dbo" / "t")
    ranges = _file_ranges(table)
    assert len(ranges) > 1
    assert all(low_next > high for (_, high), (low_next, _) in itertools.pairwise(ranges))

    # update the top keys, delete one, insert new ones above the table's range
    pq.write_table(pa.table({"id": [2990, 2995, 2999, 3000, 3001],
                             "v": ["u", "u", None, "n", "n"], M: [1, 1, 2, 0, 0]}),
                   folder / sequence_file_name(2))
    result = engine.mirror_landing_zone(spark, str(landing), str(warehouse))
    assert not result.failed
    merge = next(a["commitInfo"] for a in list(_commits(table))[-1] if "commitInfo" in a)
    assert merge["operation"] == "MERGE"
    predicate = merge["operationParameters"]["predicate"]  # as Spark's analyser rewrote it
    assert ">= 2990)" in predicate and "<= 3001)" in predicate
    rows = {r["id"]: r["v"] for r in spark.read.format("delta").load(table).collect()}
    expected = {i: f"v{i}" for i in ids if i != 2999}
    expected.update({2990: "u", 2995: "u", 3000: "n", 3001: "n"})
    assert rows == expected
