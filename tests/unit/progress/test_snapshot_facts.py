"""A Delta table's size, schema and properties read from its log (`progress.snapshot`): the
newest commit's checksum file when it has one, else the newest `metaData` action."""

from __future__ import annotations

import json
from pathlib import Path

from mirrorspec.base.files import LocalFS
from mirrorspec.progress.snapshot import latest_facts

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                        "metadata": {}}]}


def metadata(properties: dict) -> dict:
    return {"id": "x", "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(SCHEMA), "partitionColumns": [],
            "configuration": properties}


def commit(log: Path, version: int, *actions: dict, checksum: dict | None = None) -> None:
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    if checksum is not None:
        (log / f"{version:020d}.crc").write_text(json.dumps(checksum))


def test_the_newest_checksum_gives_size_properties_and_schema(tmp_path):
    log = tmp_path / "t" / "_delta_log"
    commit(log, 0, {"metaData": metadata({"delta.enableDeletionVectors": "false"})},
           checksum={"tableSizeBytes": 10, "metadata": metadata({}), "protocol": {}})
    commit(log, 1, {"commitInfo": {}}, checksum={
        "tableSizeBytes": 2048, "metadata": metadata({"delta.enableDeletionVectors": "true"}),
        "protocol": {"readerFeatures": ["deletionVectors"]}})
    facts = latest_facts(LocalFS(), str(tmp_path / "t"))
    assert facts is not None and facts.version == 1 and facts.size_bytes == 2048
    assert facts.property("delta.enableDeletionVectors") == "true"
    assert facts.reader_features == ("deletionVectors",)
    assert facts.schema == SCHEMA


def test_without_a_checksum_for_the_newest_commit_the_size_is_unknown(tmp_path):
    """An older version's checksum says nothing about the newest: the properties come from
    the newest metaData action, the size is left to Spark."""
    log = tmp_path / "t" / "_delta_log"
    commit(log, 0, {"metaData": metadata({})},
           checksum={"tableSizeBytes": 10, "metadata": metadata({}), "protocol": {}})
    commit(log, 1, {"metaData": metadata({"delta.columnMapping.mode": "name"})})
    (log / f"{2:020d}.json").write_text('{"commitInfo": {}}\n')
    (log / f"{2:020d}.crc").write_text('{"tableSizeBytes": 5, "metad')  # half written
    facts = latest_facts(LocalFS(), str(tmp_path / "t"))
    assert facts is not None and facts.version == 2 and facts.size_bytes is None
    assert facts.property("delta.columnMapping.mode") == "name"
    assert facts.schema == SCHEMA


def test_no_log_no_facts(tmp_path):
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    assert latest_facts(LocalFS(), str(tmp_path / "t")) is None
