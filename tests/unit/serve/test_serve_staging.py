"""Where serve stages uncommitted bytes: beside the landing zone, on its filesystem, or a clear
error at start (a landing zone that is a mount point would fail every flush with EXDEV)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.serve import server


def test_staging_is_beside_the_landing_zone(tmp_path):
    staging = server._staging_beside(tmp_path / "lz")
    assert staging.parent == tmp_path and staging.name == f".lz.serve-staging-{os.getpid()}"


def test_a_landing_zone_on_another_filesystem_than_its_parent_is_refused(tmp_path, monkeypatch):
    real_stat = Path.stat

    def stat(self, **kwargs):
        result = real_stat(self, **kwargs)
        if self.name == "lz":  # as a mount point's device differs from its parent's
            return os.stat_result((*result[:2], result.st_dev + 1, *result[3:]))
        return result

    monkeypatch.setattr(Path, "stat", stat)
    with pytest.raises(MirrorspecError, match="is a mount point"):
        server._staging_beside(tmp_path / "lz")
    assert not [p for p in tmp_path.iterdir() if "serve-staging" in p.name]


def test_a_staging_folder_that_cant_be_made_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(MirrorspecError, match="can't create the staging folder"):
        server._staging_beside(tmp_path / "file" / "lz")
