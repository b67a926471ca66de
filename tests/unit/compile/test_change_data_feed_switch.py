"""The change data feed switch on the compile path (no JVM): the project's `change_data_feed`,
a table's override, plan.json per table (and an older plan without the field), located schema
errors, and `diff` turning it on and off."""

from __future__ import annotations

import json

import pytest

from mirrorspec.artifacts.plan import plan_from_dict
from mirrorspec.base.errors import ProjectError
from mirrorspec.compile import compile_project
from mirrorspec.project.diff import CAUTION, SAFE, diff_plans
from tests.support.project_files import write


def project(root, feed=None, tables=None):
    doc = {"name": "shop", "version": "1"}
    if feed is not None:
        doc["change_data_feed"] = feed
    return write(root, {
        "mirrorspec_project.yml": doc,
        "tables/shop.yml": {"tables": tables or [
            {"name": "orders", "key_columns": ["id"]},
            {"name": "audit", "key_columns": ["id"], "change_data_feed": False},
            {"name": "lines", "key_columns": ["id"], "change_data_feed": True}]}})


def feeds(result):
    return {t.unique_id: t.change_data_feed for t in result.plan.tables}


def test_the_project_switch_with_a_table_override(tmp_path):
    on = compile_project(project(tmp_path / "on", feed=True))
    assert feeds(on) == {"dbo.orders": True, "dbo.audit": False, "dbo.lines": True}
    off = compile_project(project(tmp_path / "off"))  # Fabric's default: off
    assert feeds(off) == {"dbo.orders": False, "dbo.audit": False, "dbo.lines": True}
    written = json.loads((tmp_path / "on" / "target" / "plan.json").read_text())
    assert {t["unique_id"]: t["change_data_feed"] for t in written["tables"]} == feeds(on)
    # _metadata.json is the landing zone's: the switch is the mirrored database's, not in it
    for path in (tmp_path / "on" / "target" / "landing_zone").rglob("_metadata.json"):
        assert "hange" not in path.read_text()


def test_a_plan_written_before_the_field_reads_as_off(tmp_path):
    doc = json.loads(compile_project(project(tmp_path, feed=True)).plan.to_json())
    for table in doc["tables"]:
        del table["change_data_feed"]
    assert {t.change_data_feed for t in plan_from_dict(doc).tables} == {False}


@pytest.mark.parametrize("where", ["project", "table"])
def test_a_value_that_is_not_a_boolean_is_a_located_error(tmp_path, where):
    if where == "project":
        root = project(tmp_path, feed="yes")
    else:
        root = project(tmp_path, tables=[{"name": "orders", "change_data_feed": "on"}])
    with pytest.raises(ProjectError) as info:
        compile_project(root)
    text = info.value.render()
    assert "change_data_feed: expected true or false" in text
    assert ("mirrorspec_project.yml:3" if where == "project" else "tables/shop.yml:") in text


def test_diff_shows_the_feed_switched_on_and_off(tmp_path):
    before = compile_project(project(tmp_path / "a")).plan
    after = compile_project(project(tmp_path / "b", feed=True,
                                    tables=[{"name": "orders", "key_columns": ["id"]},
                                            {"name": "audit", "key_columns": ["id"]},
                                            {"name": "lines", "key_columns": ["id"],
                                             "change_data_feed": False}])).plan
    diff = diff_plans(before, after)
    changes = {t.unique_id: [(c.kind, c.severity, c.message) for c in t.changes]
               for t in diff.tables}
    assert changes["dbo.orders"] == [("change_data_feed_on", SAFE,
                                      "change data feed on: false → true")]
    assert changes["dbo.audit"] == changes["dbo.orders"]
    assert changes["dbo.lines"] == [("change_data_feed_off", CAUTION,
                                     "change data feed off: true → false")]
    assert not diff.blocking
    assert "next" in diff.tables[0].changes[0].rule.fabric
