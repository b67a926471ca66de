"""Publisher-conformance findings of `mirrorspec serve`, from the store's hooks."""

from __future__ import annotations

import json

from mirrorspec.serve.conformance import Conformance
from mirrorspec.serve.names import Place


def lz(*rel: str) -> Place:
    return Place("landing", "ws", "db.MountedRelationalDatabase", rel)


def make(tmp_path):
    (tmp_path / "lz").mkdir()
    logged: list[tuple[str, str]] = []
    c = Conformance(tmp_path / "lz", tmp_path / "report.json",
                    lambda level, message, **_f: logged.append((level, message)))
    return c, logged


def write(tmp_path, rel: str, data: bytes) -> None:
    path = tmp_path / "lz" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def kinds(tmp_path) -> list[str]:
    return [f["kind"] for f in json.loads((tmp_path / "report.json").read_text())["findings"]]


def test_metadata_rewritten_with_the_same_keys_is_fine_other_keys_are_not(tmp_path):
    c, _logged = make(tmp_path)
    meta = lz("t", "_metadata.json")
    for keys, expected in ((["id"], []), (["id"], []), (["id", "v"], ["key-columns-changed"])):
        c.before_publish(meta)  # at the create, before it truncates
        write(tmp_path, "t/_metadata.json", b"")
        c.before_publish(meta)  # at the flush: the empty file does not count
        write(tmp_path, "t/_metadata.json", json.dumps({"keyColumns": keys}).encode())
        c.published(meta, 10)
        assert kinds(tmp_path) == expected


def test_sequence_findings(tmp_path):
    c, logged = make(tmp_path)
    write(tmp_path, "t/_ProcessedFiles/00000000000000000004.parquet", b"x")
    for name in ("00000000000000000005.parquet", "00000000000000000007.parquet",
                 "00000000000000000003.parquet", "part-0001.parquet"):
        write(tmp_path, f"t/{name}", b"x")
        c.published(lz("t", name), 1)
    assert kinds(tmp_path) == ["sequence-gap", "before-processed", "not-sequence-name"]
    assert logged[0][0] == "warning" and "00000000000000000006.parquet" in logged[0][1]


def test_zero_byte_window_only_for_data_files_under_their_final_name(tmp_path):
    c, _logged = make(tmp_path)
    for rel in (("t", "_00000000000000000001.parquet"), ("t", "00000000000000000001.parquet"),
                ("t", "_metadata.json")):
        c.created(lz(*rel), visible=True)
        write(tmp_path, "/".join(rel), b"PAR1")
        c.published(lz(*rel), 4)
    c.created(lz("t", "00000000000000000002.parquet"), visible=False)  # --unflushed hidden
    write(tmp_path, "t/00000000000000000002.parquet", b"PAR1")
    c.published(lz("t", "00000000000000000002.parquet"), 4)
    assert kinds(tmp_path) == ["zero-byte-visible"]


def test_mirrored_database_item_type_is_reported_once(tmp_path):
    c, _logged = make(tmp_path)
    for item in ("db.MountedRelationalDatabase", "db.MirroredDatabase", "db.MirroredDatabase",
                 "some-guid"):
        c.item_segment(item)
    assert kinds(tmp_path) == ["item-type"]
