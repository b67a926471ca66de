"""`clean` deletes only what mirrorspec wrote in the target folder: a target-path naming the
project's tables, feeds or .git, or a foreign folder holding another project's plan.json
(which compile refuses too: one shared check), loses nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write


def _project(tmp_path: Path, **project_keys) -> Path:
    project = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1", **project_keys},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {
            "dev": {"landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/shop.yml": {"tables": [
            {"name": "orders", "schema": "sales", "key_columns": ["id"],
             "columns": [{"name": "id", "type": "Int64"}],
             "source": {"type": "csv", "path": "feeds/orders"}}]},
    })
    (project / "feeds" / "orders").mkdir(parents=True)
    (project / "feeds" / "orders" / "snapshot.csv").write_text("id\n1\n")
    return project


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _clean(project: Path, cwd: Path):
    return run_without_jvm("clean", "--project-dir", str(project), cwd=cwd, log_format="text")


@pytest.mark.parametrize("target_path,refused", [("tables", "table file of sales.orders"),
                                                  ("feeds", "feed of sales.orders"),
                                                  ("feeds/orders", "feed of sales.orders")])
def test_a_target_holding_sources_is_refused_whole(tmp_path, target_path, refused):
    project = _project(tmp_path, **{"target-path": target_path})
    before = _files(project)
    done = _clean(project, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert refused in done.stdout + done.stderr
    assert "not deleted" in done.stdout + done.stderr
    assert len((done.stdout + done.stderr).strip().splitlines()) <= 2  # error + hint
    assert _files(project) == before


def test_dot_git_as_target_keeps_every_file(tmp_path):
    project = _project(tmp_path, **{"target-path": ".git"})
    (project / ".git" / "objects").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / ".git" / "objects" / "ab").write_bytes(b"\x00blob")
    before = _files(project)
    done = _clean(project, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Nothing to clean" in done.stdout and "left alone" in done.stdout
    assert _files(project) == before


def test_a_foreign_target_with_another_projects_plan_is_refused(tmp_path):
    other = tmp_path / "other_target"
    other.mkdir()
    (other / "plan.json").write_text(json.dumps({"project_name": "billing", "tables": []}))
    (other / "run_results.json").write_text("{}")
    project = _project(tmp_path, **{"target-path": str(other), "target-outside-project": True})
    done = run_without_jvm("compile", "--project-dir", str(project), cwd=tmp_path,
                           log_format="text")
    assert done.returncode == 1 and "plan of project 'billing'" in done.stdout + done.stderr
    done = _clean(project, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "plan of project 'billing'" in done.stdout + done.stderr
    assert sorted(p.name for p in other.iterdir()) == ["plan.json", "run_results.json"]


def test_what_compile_and_run_wrote_goes_and_the_rest_stays(tmp_path):
    project = _project(tmp_path)
    done = run_without_jvm("compile", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    target = project / "target"
    (target / "run_results.json").write_text("{}")
    (target / "notes.txt").write_text("mine")
    edited = target / "landing_zone" / "sales.schema" / "orders" / "_metadata.json"
    assert edited.is_file()
    done = _clean(project, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "left 1 file(s)" in done.stdout
    assert _files(target) == {"notes.txt": b"mine"}
    assert _files(project / "feeds") == {"orders/snapshot.csv": b"id\n1\n"}


def test_nothing_is_deleted_through_a_link(tmp_path):
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "target").mkdir()
    (project / "target" / "landing_zone").symlink_to(outside)
    done = run_without_jvm("compile", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = _files(outside)
    assert written  # compile wrote its _metadata.json copy through the link
    done = _clean(project, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _files(outside) == written
