"""`mirrorspec init`: a project that compiles, with editor schema hints that resolve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspec.compile import compile_project
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.project.scaffold import scaffold_project

REPO = Path(__file__).resolve().parents[3]


def test_init_creates_a_project_that_compiles(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = scaffold_project("shop")
    assert root == Path("shop")
    for name in ("mirrorspec_project.yml", "profiles.yml", "tables/orders.yml", ".gitignore",
                 "README.md", ".mirrorspec/schemas/tables.schema.json", ".vscode/settings.json"):
        assert (root / name).is_file(), name
    result = compile_project(root, environ={})
    assert result.plan.project_name == "shop"
    assert [t.unique_id for t in result.plan.tables] == ["sales.customers", "sales.orders"]
    assert (root / "target/landing_zone/sales.schema/orders/_metadata.json").exists()


def test_every_yaml_file_starts_with_a_schema_line_that_resolves(tmp_path):
    root = scaffold_project(tmp_path / "shop")
    yaml_files = sorted(root.rglob("*.yml"))
    assert len(yaml_files) == 3
    for path in yaml_files:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema=")
        schema = (path.parent / first.split("$schema=", 1)[1]).resolve()
        assert schema.is_file(), f"{path}: {schema}"
        assert json.loads(schema.read_text())["$schema"].startswith("https://json-schema.org/")
    settings = json.loads((root / ".vscode/settings.json").read_text())["yaml.schemas"]
    for schema in settings:
        assert (root / schema).is_file(), schema
    copied = root / ".mirrorspec/schemas/project.schema.json"
    assert copied.read_text() == (REPO / "mirrorspec/schemas/project.schema.json").read_text()


def test_example_projects_point_at_the_repository_schemas():
    for path in sorted((REPO / "projects").glob("*/**/*.yml")):
        if "target" in path.parts:
            continue
        first = path.read_text().splitlines()[0]
        if first.startswith("# yaml-language-server: $schema="):
            schema = (path.parent / first.split("$schema=", 1)[1]).resolve()
            assert schema.is_file(), f"{path}: {schema}"


def test_init_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "keep.txt").write_text("x")
    with pytest.raises(MirrorspecError, match="already exists and is not empty"):
        scaffold_project(tmp_path / "shop")
    scaffold_project(tmp_path / "shop", force=True)
    assert (tmp_path / "shop" / "keep.txt").read_text() == "x"


def test_init_refuses_an_unusable_name(tmp_path):
    with pytest.raises(MirrorspecError, match="not a usable project name"):
        scaffold_project(tmp_path / "my shop")
