"""The mirrored tables read back by an independent Delta reader: the `deltalake` package (delta-rs).

Rows must equal the reference model (deletion vectors honoured), and the commit that applied the
files must carry the `txn` action: appId = the table's mirror id, version = the last applied
file sequence.
"""

from __future__ import annotations

import glob
import json
import os

import pyarrow as pa
import pytest

from mirrorspec.openmirroring.mirroring import mirror_id
from tests.support.reference_model import (
    MARKER, LandingFile, ModelTable, as_multiset, sequence_name, write_metadata, write_parquet)

engine = pytest.importorskip("mirrorspec.spark.mirror.engine")
deltalake = pytest.importorskip("deltalake")

COLS = ("id", "v", MARKER)
TYPES = ("int64", "string", "int32")
RUN1 = [
    LandingFile(sequence_name(1), ("id", "v"), tuple((i, f"v{i}") for i in range(20)),
                ("int64", "string")),
    LandingFile(sequence_name(2), COLS, ((3, "three", 1), (4, None, 2), (4, "again", 0),
                                         (50, "new", 4), (5, "dup", 0)), TYPES),
]
RUN2 = [
    LandingFile(sequence_name(3), ("id", "v", "extra", MARKER),
                ((6, "six", "x", 1), (7, None, None, 2), (51, "n", "y", 0)),
                ("int64", "string", "string", "int32")),
    LandingFile(sequence_name(4), COLS, ((5, "five", 4), (8, None, 2)), TYPES),
]


def read_with_deltalake(path: str) -> tuple[list[str], list[dict]]:
    """Rows through delta-rs' scan, which applies deletion vectors (to_pyarrow_table refuses
    tables whose protocol lists the deletionVectors reader feature)."""
    table = deltalake.DeltaTable(path)
    data = pa.RecordBatchReader.from_stream(table.scan()).read_all()
    return data.column_names, data.to_pylist()


def txn_actions(path: str) -> list[dict]:
    actions = []
    for log in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json"))):
        with open(log) as handle:
            for line in handle:
                if line.strip():
                    action = json.loads(line)
                    if "txn" in action:
                        actions.append(action["txn"])
    return actions


@pytest.fixture(scope="module")
def mirrored(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("deltalake_reader")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    keyed = os.path.join(landing, "crm.schema", "customers")
    keyless = os.path.join(landing, "events")
    write_metadata(keyed, ["id"])
    os.makedirs(keyless)
    model = ModelTable(["id"])
    log_model = ModelTable([])
    log_files = [LandingFile(sequence_name(n), ("id", "v"), ((n, "e"), (n, "e")),
                             ("int64", "string")) for n in (1, 2)]
    for f in RUN1:
        write_parquet(f, keyed)
    for f in log_files:
        write_parquet(f, keyless)
    model.apply(RUN1)
    log_model.apply(log_files)
    first = engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions())
    assert not first.failed, first.tables
    for f in RUN2:
        write_parquet(f, keyed)
    model.apply(RUN2)
    second = engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions())
    assert not second.failed, second.tables
    return {"customers": (os.path.join(warehouse, "crm", "customers"), model, "crm", 4),
            "events": (os.path.join(warehouse, "dbo", "events"), log_model, None, 2)}


@pytest.mark.parametrize("table", ["customers", "events"])
def test_deltalake_reads_the_rows_of_the_model(mirrored, table):
    path, model, _schema, _last = mirrored[table]
    columns, rows = read_with_deltalake(path)
    assert columns == model.columns
    assert as_multiset(columns, rows) == model.multiset()


@pytest.mark.parametrize("table", ["customers", "events"])
def test_txn_action_holds_the_last_applied_sequence(mirrored, table):
    path, _model, schema, last = mirrored[table]
    app_id = mirror_id(schema, table)
    versions = [t["version"] for t in txn_actions(path) if t.get("appId") == app_id]
    assert versions, f"no txn action with appId {app_id!r} in {path}/_delta_log"
    assert max(versions) == last
    assert deltalake.DeltaTable(path).transaction_version(app_id) == last


def test_deltalake_sees_the_latest_version_and_protocol(mirrored):
    path, *_ = mirrored["customers"]
    table = deltalake.DeltaTable(path)
    protocol = table.protocol()
    # a small table without a `deletion_vectors:` switch: none (docs/readers.md), so every
    # delta-rs route, to_pyarrow_table included, reads it
    assert "deletionVectors" not in (protocol.reader_features or [])
    assert len(table.to_pyarrow_table().to_pylist()) == len(read_with_deltalake(path)[1])
    assert table.version() >= 1
    assert [f.name for f in table.schema().fields] == ["id", "v", "extra"]
