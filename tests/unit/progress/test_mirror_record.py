"""The engine's progress record has one typed home (progress.mirror.MirrorRecord): the same JSON
keys in the same order as every earlier version wrote, and older records still read."""

from __future__ import annotations

import json

from mirrorspec.progress.mirror import STATE_KEY, MirrorRecord

# The keys, in order, of the dict the engine built inline before the record had a type.
WRITTEN_BEFORE = ["format", "table", "mode", "files", "carry", "stats", "sequence", "keys",
                  "batch", "watermark", "folder_id", "landing_zone", "landing_path", "rows",
                  "bytes", "processed_rows", "processed_bytes", "attempt"]


def test_the_record_writes_the_keys_earlier_versions_wrote_in_their_order():
    record = MirrorRecord(table="dbo.t", mode="sequence", files=["00000000000000000003.parquet"],
                          sequence=3, keys=["id"], batch=2, watermark=[1.5, "x"], rows=4,
                          bytes=10, processed_rows=9, processed_bytes=30, attempt="a1")
    assert list(record.to_json()) == WRITTEN_BEFORE
    meta = json.loads(record.user_metadata())[STATE_KEY]
    assert meta["format"] == 1
    assert MirrorRecord.from_json(meta) == record and record.txn_version == 3


def test_a_record_from_before_stats_and_carry_still_reads():
    older = {"format": 1, "table": "dbo.t", "mode": "time", "files": ["a.parquet"],
             "sequence": None, "keys": [], "batch": 7, "watermark": [10.0, "a.parquet"],
             "folder_id": "f", "landing_zone": "/lz", "landing_path": "/lz/t", "rows": 1,
             "bytes": 2, "processed_rows": 3, "processed_bytes": 4, "attempt": "z",
             "unknown_later_key": True}
    record = MirrorRecord.from_json(older)
    assert (record.carry, record.stats, record.batch) == ([], {}, 7)
    assert record.txn_version == 7 and record.done == {"a.parquet"}


def test_nulls_an_older_writer_left_take_the_defaults_and_missing_keys_stay_unknown():
    record = MirrorRecord.from_json({"table": "dbo.t", "files": None, "carry": None,
                                     "stats": None, "batch": None, "sequence": None})
    assert (record.files, record.carry, record.stats, record.batch) == ([], [], {}, 0)
    assert record.sequence is None and record.txn_version == 0
    # a record written before key columns were recorded: reconcile asks for --key
    assert record.keys is None and record.to_json()["keys"] is None
    assert MirrorRecord.from_json({"keys": []}).keys == []
