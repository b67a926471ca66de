"""Publisher-conformance findings of `mirrorspec serve`, from the store's hooks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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


def test_a_zero_byte_data_file_published_is_an_error(tmp_path):
    c, _logged = make(tmp_path)
    write(tmp_path, "t/00000000000000000001.parquet", b"")  # an empty temp renamed, a 0-byte Put Blob
    c.published(lz("t", "00000000000000000001.parquet"), 0)
    write(tmp_path, "t/_00000000000000000002.tmp", b"")  # a temporary name is not data
    c.published(lz("t", "_00000000000000000002.tmp"), 0)
    assert kinds(tmp_path) == ["empty-data-file"]


def test_a_re_key_by_delete_and_upload_is_reported_a_recreated_folder_is_not(tmp_path):
    c, _logged = make(tmp_path)
    meta = lz("t", "_metadata.json")
    write(tmp_path, "t/_metadata.json", json.dumps({"keyColumns": ["id"]}).encode())
    c.before_delete(meta)  # DELETE _metadata.json alone
    (tmp_path / "lz" / "t" / "_metadata.json").unlink()
    c.before_publish(meta)
    write(tmp_path, "t/_metadata.json", json.dumps({"keyColumns": ["v"]}).encode())
    c.published(meta, 10)
    assert kinds(tmp_path) == ["key-columns-changed"]
    c.before_delete(lz("t"))  # the whole table folder: the documented way to re-key
    shutil.rmtree(tmp_path / "lz" / "t")
    c.before_publish(meta)
    write(tmp_path, "t/_metadata.json", json.dumps({"keyColumns": ["w"]}).encode())
    c.published(meta, 10)
    assert kinds(tmp_path) == ["key-columns-changed"]


def test_each_finding_writes_a_few_bytes_however_many_came_before(tmp_path):
    """The report is not rewritten whole per finding (that made each request slower as
    findings piled up): the bytes this process writes for one more finding stay flat."""
    io = Path("/proc/self/io")
    if not io.exists():
        pytest.skip("needs Linux's /proc/self/io")

    def written() -> int:
        return int(next(line for line in io.read_text().splitlines()
                        if line.startswith("wchar:")).split()[1])

    c, _logged = make(tmp_path)
    for i in range(500):
        c.add("sequence-gap", "warning", f"t/{i:020d}.parquet", "the table waits " * 5)
    before = written()
    for i in range(20):
        c.add("sequence-gap", "warning", f"u/{i:020d}.parquet", "the table waits " * 5)
    per_finding = (written() - before) / 20
    report = tmp_path / "report.json"
    assert per_finding < 600 < report.stat().st_size / 50
    doc = json.loads(report.read_text())
    assert (len(doc["findings"]), doc["warnings"], doc["counts"]) == (520, 520, {"sequence-gap": 520})


def test_a_report_that_cant_be_written_changes_no_answer_and_warns_once(tmp_path, monkeypatch):
    import os

    c, logged = make(tmp_path)

    def full(*_a):
        raise OSError(28, "No space left on device")

    for name in ("00000000000000000003.parquet", "00000000000000000005.parquet"):
        write(tmp_path, f"t/{name}", b"x")
    monkeypatch.setattr(os, "pwrite", full)
    monkeypatch.setattr(os, "replace", full)
    for name in ("00000000000000000003.parquet", "00000000000000000005.parquet"):
        c.published(lz("t", name), 1)  # would be a 404/500 to the client if it raised
    warnings = [m for level, m in logged if level == "warning" and "can't write" in m]
    assert len(warnings) == 1 and "No space left on device" in warnings[0]
    monkeypatch.undo()
    c.close()  # the disk has room again: the report is whole
    assert kinds(tmp_path) == ["sequence-gap"]


def test_a_failing_check_is_a_warning_not_an_answer(tmp_path, monkeypatch):
    from mirrorspec.serve import conformance

    c, logged = make(tmp_path)
    monkeypatch.setattr(conformance, "_sequences", lambda _f: 1 / 0)
    write(tmp_path, "t/00000000000000000001.parquet", b"x")
    c.published(lz("t", "00000000000000000001.parquet"), 1)
    c.published(lz("t", "00000000000000000001.parquet"), 1)
    assert [level for level, m in logged if "check failed" in m] == ["warning"]


def test_a_report_that_cant_be_created_is_an_error_at_start(tmp_path):
    from mirrorspec.base.errors import MirrorspecError

    (tmp_path / "lz").mkdir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(MirrorspecError, match="--report .*can't write it"):
        Conformance(tmp_path / "lz", tmp_path / "file" / "report.json", lambda *a, **k: None)
