"""A feed file its producer writes again under a name already published (AWS DMS numbers a
reloaded table's full load from LOAD00000001 again): the publisher state keeps each such
file's stamp, and a changed stamp says the file was written again (progress/publish.py)."""

from __future__ import annotations

import os

from mirrorspec.base.files import Files
from mirrorspec.progress.publish import STAMPS, file_stamps, rewritten_files
from mirrorspec.sources.aws_dms import AwsDmsFormat


def test_a_file_written_again_under_its_name_is_told_by_its_stamp(tmp_path):
    load = tmp_path / "dms" / "LOAD00000001.csv"
    other = tmp_path / "dms" / "LOAD00000002.csv"
    load.parent.mkdir()
    load.write_text("1,a\n2,b\n")
    other.write_text("3,c\n")
    files = [str(load), str(other)]
    state = {STAMPS: file_stamps(Files(), files)}
    assert set(state[STAMPS]) == set(files)
    assert rewritten_files(state, file_stamps(Files(), files)) == []
    load.write_text("1,a2\n")  # the reload: fewer rows, another size and time
    os.utime(other, (1, 1))  # touched: a new time is a new stamp too
    assert rewritten_files(state, file_stamps(Files(), files)) == sorted(files)


def test_a_file_gone_or_never_stamped_is_not_rewritten(tmp_path):
    kept = tmp_path / "LOAD00000001.csv"
    kept.write_text("1,a\n")
    state = {STAMPS: file_stamps(Files(), [str(kept), str(tmp_path / "gone.csv")])}
    assert list(state[STAMPS]) == [str(kept)]  # a file gone has no stamp
    fresh = tmp_path / "LOAD00000002.csv"
    fresh.write_text("2,b\n")
    assert rewritten_files(state, file_stamps(Files(), [str(kept), str(fresh)])) == []


def test_only_dms_full_load_files_are_stamped():
    dms = AwsDmsFormat()
    assert dms.rewritable("s3a://b/dms/shop/items/LOAD0000000A.csv")
    assert dms.rewritable("/feeds/items/LOAD00000001.parquet")
    assert not dms.rewritable("/feeds/items/20231029-113401000.csv")
