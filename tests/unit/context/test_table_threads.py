"""How many tables `run` and `mirror` process at once: --threads, else the profile output's
`threads` (carried in the plan), else twice the CPU cores, 2 to 8."""

from __future__ import annotations

import json

import pytest

from mirrorspec.context import threads as params
from mirrorspec.compile import validate_project
from mirrorspec.base.errors import ProjectError
from mirrorspec.artifacts.plan import plan_from_dict
from tests.support.project_files import write


def plan_of(root, output: dict):
    write(root, {"mirrorspec_project.yml": {"name": "p"}, "tables/t.yml": {"tables": [{"name": "a"}]},
                 "profiles.yml": {"p": {"outputs": {"dev": output}}}})
    return validate_project(str(root)).plan


def test_the_profile_key_reaches_the_plan(tmp_path):
    plan = plan_of(tmp_path / "1", {"threads": 3})
    assert plan.threads == 3
    assert plan_from_dict(json.loads(plan.to_json())).threads == 3
    assert plan_of(tmp_path / "2", {}).threads is None


def test_zero_threads_is_a_located_error(tmp_path):
    with pytest.raises(ProjectError) as info:
        plan_of(tmp_path, {"threads": 0})
    assert "threads" in str(info.value)


def test_the_flag_wins_then_the_profile_then_the_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert params.resolve_table_threads(5, 3) == 5
    assert params.resolve_table_threads(None, 3) == 3
    assert params.resolve_table_threads(None, None) == 4
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert params.default_table_threads() == 8
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert params.default_table_threads() == 2
