"""Symlinks out of the landing zone / warehouse, the JVM-free parts."""

from __future__ import annotations

import os

import pytest

from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base import files as fs
from mirrorspec.landing.processed import LandingFiles


def test_outside_root_follows_links_anywhere_on_the_path(tmp_path):
    root, outside = tmp_path / "lz", tmp_path / "outside"
    (root / "t").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, root / "t" / "_ProcessedFiles")
    os.symlink(root / "t", root / "alias")  # a link that stays inside
    assert fs.outside_root(str(root / "t" / "_ProcessedFiles"), str(root)) == str(outside)
    assert fs.outside_root(str(root / "t" / "_ProcessedFiles" / "f.parquet"), str(root)) == \
        str(outside / "f.parquet")
    assert fs.outside_root(str(root / "alias"), str(root)) is None
    assert fs.outside_root(str(root / "t"), str(root)) is None
    assert fs.outside_root("s3a://bucket/lz/t", "s3a://bucket/lz") is None


def test_full_refresh_never_moves_files_back_through_a_link(tmp_path):
    folder, outside = tmp_path / "lz" / "t", tmp_path / "outside"
    folder.mkdir(parents=True)
    outside.mkdir()
    (outside / "00000000000000000001.parquet").write_text("not ours")
    os.symlink(outside, folder / "_ProcessedFiles")
    with pytest.raises(LandingZoneError) as caught:
        LandingFiles().restore_processed(str(folder))
    assert caught.value.code == "LinkOutsideRoot"
    assert os.listdir(outside) == ["00000000000000000001.parquet"]
