"""The delta-rs reader (docs/onelake.md, "Acceptance"): delta-rs (Rust object_store's Azure backend, the reader OneLake's docs
name as compatible) reads a mirrored table from `Tables/` through `mirrorspec serve`'s Blob
dialect (List Blobs with a prefix and `startFrom`, ranged GETs) and gets the warehouse's rows; a
write to `Tables/` is refused."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.support.onelake_server import OneLakeServe

URI = "abfs://ws@onelake.dfs.fabric.microsoft.com/db.MountedRelationalDatabase/Tables/sales/orders"


def test_delta_rs_reads_tables_through_the_endpoint_and_cannot_write(tmp_path):
    table = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]})
    write_deltalake(str(tmp_path / "warehouse" / "sales" / "orders"), table)
    write_deltalake(str(tmp_path / "warehouse" / "sales" / "orders"), table.slice(0, 1), mode="append")
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db", "--page-size", "2")
    try:
        options = {"azure_storage_account_name": "onelake", "azure_storage_token": "any",
                   "azure_storage_endpoint": server.ready["account_url"], "azure_allow_http": "true"}
        read = DeltaTable(URI, storage_options=options)
        assert read.version() == 1
        assert sorted(read.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "v": "a"}, {"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}]
        with pytest.raises(Exception, match="403|OperationNotAllowedOnPath|Forbidden"):
            write_deltalake(URI, table, mode="append", storage_options=options)
    finally:
        assert server.stop() == 0
    assert len(list((tmp_path / "warehouse" / "sales" / "orders" / "_delta_log").glob("*.json"))) == 2
