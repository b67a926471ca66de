"""Pure tests of the landing-zone layout rules the engine applies (mirrorspec.landing.layout)."""

from __future__ import annotations

import os

import pytest

from mirrorspec.openmirroring import mirroring as m
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.landing import layout as landing
from mirrorspec.base.files import LocalFS


def touch(path, content=b"x", mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def listing_of(names, mtimes=None):
    files = []
    for i, name in enumerate(names):
        files.append(landing.LandingFile(name, "/lz/t/" + name, 1,
                                         (mtimes or {}).get(name, float(i)),
                                         m.data_file_format(name) or "parquet",
                                         m.parse_sequence(name)))
    return landing.FolderListing(files=files)


def test_discover_root_and_schema_folders(tmp_path):
    lz = str(tmp_path)
    touch(f"{lz}/orders/_metadata.json", b"{}")
    touch(f"{lz}/sales.schema/items/00000000000000000001.parquet")
    touch(f"{lz}/sales.schema/empty/readme.txt")
    touch(f"{lz}/_scratchPad/00000000000000000001.parquet")
    touch(f"{lz}/_partnerEvents.json", b"{}")
    os.makedirs(f"{lz}/newfolder")
    found = [(t.schema, t.name) for t in landing.discover(LocalFS(), lz)]
    assert found == [(None, "orders"), ("sales", "items")]


def test_metadata_file_name_is_case_insensitive_and_absence_means_keyless(tmp_path):
    touch(f"{tmp_path}/a/_Metadata.json", b'{"keyColumns": ["id"]}')
    assert landing.read_metadata(LocalFS(), f"{tmp_path}/a").key_columns == ("id",)
    os.makedirs(f"{tmp_path}/b")
    meta = landing.read_metadata(LocalFS(), f"{tmp_path}/b")
    assert not meta.present and not meta.keyed


def test_list_folder_ignores_reserved_and_warns_on_others(tmp_path):
    folder = f"{tmp_path}/t"
    touch(f"{folder}/00000000000000000001.parquet")
    touch(f"{folder}/_00000000000000000002.parquet")
    touch(f"{folder}/_ProcessedFiles/00000000000000000000.parquet")
    touch(f"{folder}/notes.txt")
    touch(f"{folder}/{landing.FOLDER_ID_FILE}", b"abc\n")
    listing = landing.list_folder(LocalFS(), folder, m.TableMetadata())
    assert [f.name for f in listing.files] == ["00000000000000000001.parquet"]
    assert listing.folder_id == "abc"
    assert any("notes.txt" in w for w in listing.warnings)


def test_sequence_starts_at_one_and_stops_at_a_gap():
    names = [m.sequence_file_name(i) for i in (1, 2, 4, 5)]
    pending = landing.pending_by_sequence(listing_of(names), 0)
    assert [f.sequence for f in pending.files] == [1, 2]
    assert pending.awaiting == m.sequence_file_name(3)


def test_sequence_continues_from_applied_and_reports_applied_files_present():
    names = [m.sequence_file_name(i) for i in (3, 4, 5)]
    pending = landing.pending_by_sequence(listing_of(names), 4)
    assert [f.sequence for f in pending.files] == [5]
    assert [f.sequence for f in pending.applied_present] == [3, 4]
    assert pending.awaiting is None


def test_missing_first_file_blocks_everything():
    pending = landing.pending_by_sequence(listing_of([m.sequence_file_name(2)]), 0)
    assert pending.files == [] and pending.awaiting == m.sequence_file_name(1)


def test_duplicate_sequence_is_an_error():
    names = ["00000000000000000001.parquet", "00000000000000000001.csv"]
    with pytest.raises(LandingZoneError):
        landing.pending_by_sequence(listing_of(names), 0)


def test_last_update_time_orders_by_mtime_then_name_and_skips_done():
    listing = listing_of(["b.parquet", "a.parquet", "c.parquet", "d.parquet"],
                         {"b.parquet": 5.0, "a.parquet": 5.0, "c.parquet": 1.0, "d.parquet": 9.0})
    pending = landing.pending_by_time(listing, {"d.parquet"})
    assert [f.name for f in pending.files] == ["c.parquet", "a.parquet", "b.parquet"]
    assert [f.name for f in pending.applied_present] == ["d.parquet"]


def test_dot_folders_are_reported_as_ignored(tmp_path):
    lz = str(tmp_path)
    touch(f"{lz}/.hidden/00000000000000000001.parquet")
    touch(f"{lz}/sales.schema/.secret/00000000000000000001.parquet")
    touch(f"{lz}/orders/.ipynb_checkpoints/x.parquet")
    touch(f"{lz}/orders/.00000000000000000001.parquet.crc")  # Hadoop's checksums: no noise
    touch(f"{lz}/orders/00000000000000000001.parquet")
    fs = LocalFS()
    assert [t.name for t in landing.discover(fs, lz)] == ["orders"]
    assert landing.hidden_folders(fs, lz) == [
        f"{lz}/.hidden: hidden folder (name starts with '.') ignored; it is never mirrored",
        f"{lz}/sales.schema/.secret: hidden folder (name starts with '.') ignored; it is never "
        "mirrored"]
    listing = landing.list_folder(fs, f"{lz}/orders", m.TableMetadata(present=False))
    assert listing.warnings == [f"{lz}/orders/.ipynb_checkpoints: hidden folder (name starts "
                                "with '.') ignored; it is never mirrored"]
    assert [f.name for f in listing.files] == ["00000000000000000001.parquet"]


def test_names_outside_the_sequence_are_warned_about():
    listing = listing_of(["00000000000000000001.parquet", "2.parquet", "0" * 19 + ".parquet",
                          "0" * 20 + "3.parquet"])
    landing.pending_by_sequence(listing, 0)
    assert [w.split(":")[0] for w in listing.warnings] == [
        "/lz/t/2.parquet", "/lz/t/" + "0" * 19 + ".parquet", "/lz/t/" + "0" * 20 + "3.parquet"]
