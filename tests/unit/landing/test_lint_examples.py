"""Every example project's compiled landing zone lints clean, and so does parquet_orders with
its sample landing files in place (the feed projects' published files are linted in the Spark
end-to-end tests)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mirrorspec.compile import compile_project
from mirrorspec.landing.lint import lint_landing_zone

REPO = Path(__file__).resolve().parents[3]
PROJECTS = sorted(p.name for p in (REPO / "projects").iterdir()
                  if (p / "mirrorspec_project.yml").exists())


@pytest.mark.parametrize("name", PROJECTS)
def test_compiled_landing_zone_lints_clean(tmp_path, monkeypatch, name):
    root = tmp_path / name
    shutil.copytree(REPO / "projects" / name, root,
                    ignore=shutil.ignore_patterns("target", "landing_zone", "warehouse"))
    monkeypatch.chdir(root)
    compile_project(root)
    landing = root / "target" / "landing_zone"
    if (root / "seed_files").is_dir():
        shutil.copytree(root / "seed_files", landing, dirs_exist_ok=True)
    result = lint_landing_zone(str(landing))
    assert result.tables, "the project compiles tables"
    assert result.all_findings() == []
