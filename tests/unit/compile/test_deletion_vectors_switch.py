"""`deletion_vectors:` per table, in `defaults:` and per profile output, resolved into the plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspec.compile import validate_project
from mirrorspec.artifacts.plan import plan_from_dict
from mirrorspec.base.errors import ProjectError
from tests.support.project_files import write


def plan_of(root: Path, tables: list, defaults: dict | None = None, output: dict | None = None):
    files = {"mirrorspec_project.yml": {"name": "p", **({"defaults": defaults} if defaults else {})},
             "tables/t.yml": {"tables": tables}}
    if output is not None:
        files["profiles.yml"] = {"p": {"outputs": {"dev": output}}}
    write(root, files)
    return validate_project(str(root)).plan


def switches(plan) -> dict[str, bool | None]:
    return {t.name: t.deletion_vectors for t in plan.tables}


def test_by_size_by_default(tmp_path):
    """No switch anywhere: the plan says None, and the engine decides by the table's size."""
    assert switches(plan_of(tmp_path, [{"name": "a"}])) == {"a": None}
    assert switches(plan_of(tmp_path / "2", [{"name": "a"}], output={})) == {"a": None}


def test_table_over_defaults_over_profile(tmp_path):
    tables = [{"name": "a"}, {"name": "b", "deletion_vectors": True},
              {"name": "c", "deletion_vectors": False}]
    assert switches(plan_of(tmp_path / "1", tables, output={"deletion_vectors": False})) == \
        {"a": False, "b": True, "c": False}
    assert switches(plan_of(tmp_path / "2", tables, defaults={"deletion_vectors": False},
                            output={"deletion_vectors": True})) == \
        {"a": False, "b": True, "c": False}


def test_a_plan_without_the_field_means_by_size(tmp_path):
    plan = plan_of(tmp_path, [{"name": "a", "deletion_vectors": False}])
    doc = plan_from_dict(json.loads(plan.to_json()))
    assert doc.tables[0].deletion_vectors is False
    raw = json.loads(plan.to_json())
    del raw["tables"][0]["deletion_vectors"]
    assert plan_from_dict(raw).tables[0].deletion_vectors is None
    raw["tables"][0]["deletion_vectors"] = None
    assert plan_from_dict(raw).tables[0].deletion_vectors is None


@pytest.mark.parametrize("where", ["table", "output"])
def test_not_a_boolean_is_a_located_error(tmp_path, where):
    table = {"name": "a", **({"deletion_vectors": "no"} if where == "table" else {})}
    output = {"deletion_vectors": "off"} if where == "output" else None
    with pytest.raises(ProjectError) as info:
        plan_of(tmp_path, [table], output=output)
    assert "deletion_vectors: expected true or false" in str(info.value)
