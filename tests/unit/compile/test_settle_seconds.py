"""`settle_seconds:` per table, in `defaults:` and per profile output, resolved into the plan
and handed to the engine (for producers that write landing files in place)."""

from __future__ import annotations

import json

import pytest

from mirrorspec.artifacts.plan import plan_from_dict
from mirrorspec.base.errors import ProjectError
from tests.unit.compile.test_deletion_vectors_switch import plan_of


def settle(plan) -> dict[str, float]:
    return {t.name: t.settle_seconds for t in plan.tables}


def test_table_over_defaults_over_profile(tmp_path):
    assert settle(plan_of(tmp_path / "0", [{"name": "a"}])) == {"a": 0}
    tables = [{"name": "a"}, {"name": "b", "settle_seconds": 5}]
    assert settle(plan_of(tmp_path / "1", tables, output={"settle_seconds": 30})) == \
        {"a": 30, "b": 5}
    assert settle(plan_of(tmp_path / "2", tables, defaults={"settle_seconds": 60},
                          output={"settle_seconds": 30})) == {"a": 60, "b": 5}


def test_a_plan_without_the_field_means_no_settle_time(tmp_path):
    raw = json.loads(plan_of(tmp_path, [{"name": "a", "settle_seconds": 2.5}]).to_json())
    assert plan_from_dict(raw).tables[0].settle_seconds == 2.5
    del raw["tables"][0]["settle_seconds"]
    assert plan_from_dict(raw).tables[0].settle_seconds == 0


@pytest.mark.parametrize("value", [-1, "soon"])
def test_a_negative_or_non_number_is_a_located_error(tmp_path, value):
    with pytest.raises(ProjectError) as info:
        plan_of(tmp_path, [{"name": "a", "settle_seconds": value}])
    assert "settle_seconds" in str(info.value) and "t.yml" in str(info.value)
