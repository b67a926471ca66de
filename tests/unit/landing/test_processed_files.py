"""The `_ProcessedFiles/` lifecycle without a JVM (landing/processed.py): moves recorded in the
ledger first, the purge deletes only what the engine moved itself and is past the retention."""

from __future__ import annotations

import os
import time

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.files import LocalFS
from mirrorspec.landing.layout import LandingFile
from mirrorspec.landing.processed import ledger_path, move_to_processed, purge_processed


def _file(folder, name: str) -> LandingFile:
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write("x")
    return LandingFile(name, path, 1, os.path.getmtime(path), "parquet",
                       mirroring.parse_sequence(name))


def test_moves_are_recorded_and_the_purge_keeps_what_it_did_not_move(tmp_path):
    folder = str(tmp_path / "t")
    os.makedirs(os.path.join(folder, mirroring.PROCESSED_FOLDER))
    fs = LocalFS()
    one, two = _file(folder, f"{1:020d}.parquet"), _file(folder, f"{2:020d}.parquet")
    foreign = os.path.join(folder, mirroring.PROCESSED_FOLDER, "someone_elses.parquet")
    open(foreign, "w").close()
    move_to_processed(fs, folder, [one, two], "dbo.t")
    processed = os.path.join(folder, mirroring.PROCESSED_FOLDER)
    assert sorted(os.listdir(processed)) == [one.name, two.name, "someone_elses.parquet"]
    assert open(ledger_path(folder)).read().split() == [one.name, two.name]
    old = time.time() - 10 * 86400
    for name in (one.name, "someone_elses.parquet"):
        os.utime(os.path.join(processed, name), (old, old))
    purge_processed(fs, folder, retention_days=7)
    assert sorted(os.listdir(processed)) == [two.name, "someone_elses.parquet"]
    assert open(ledger_path(folder)).read().split() == [two.name]


def test_a_file_another_process_moved_already_is_skipped(tmp_path):
    folder = str(tmp_path / "t")
    os.makedirs(folder)
    gone = LandingFile("00000000000000000001.parquet", os.path.join(folder, "missing"), 0, 0.0,
                       "parquet", 1)
    move_to_processed(LocalFS(), folder, [gone], "dbo.t")  # no error
    assert open(ledger_path(folder)).read().split() == [gone.name]
