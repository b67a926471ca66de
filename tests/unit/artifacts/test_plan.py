"""The plan format: round trip, version check, secrets placeholders."""

import json

import pytest

from mirrorspec.artifacts.plan import (
    PLAN_VERSION, ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan, TableStep, plan_from_dict,
    read_plan, resolve_secrets, secret_placeholder)
from mirrorspec.base.errors import PlanError


def make_plan(**overrides) -> Plan:
    table = TablePlan(
        unique_id="sales.orders", name="orders", schema="sales", warehouse_schema="sales",
        landing_path="/lz/sales.schema/orders", delta_path="/wh/sales/orders",
        metadata={"keyColumns": ["id"]}, key_columns=["id"],
        columns=[ColumnSpec("id", "Int64", False), ColumnSpec("note", "String")],
        source=SourceSpec("qlik_replicate", "/feeds/orders", {"x": 1}),
        steps=[TableStep("PublishFeed"), TableStep("MirrorTable")], tags=["core"])
    fields = dict(plan_version=PLAN_VERSION, project_name="p", project_version="1", profile="p",
                  target="dev", landing_zone="/lz", warehouse="/wh", state_path="/wh/_mirrorspec",
                  spark=SparkSpec(conf={"spark.sql.shuffle.partitions": "4"}),
                  partner_events=None, tables=[table])
    fields.update(overrides)
    return Plan(**fields)


def test_round_trip_is_lossless_and_deterministic(tmp_path):
    plan = make_plan()
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    again = read_plan(path)
    assert again == plan
    assert again.to_json() == plan.to_json()
    assert again.table("sales.orders").columns[0] == ColumnSpec("id", "Int64", False)


def test_other_plan_version_is_refused_with_a_hint(tmp_path):
    doc = json.loads(make_plan().to_json())
    doc["plan_version"] = PLAN_VERSION + 1
    with pytest.raises(PlanError) as info:
        plan_from_dict(doc)
    assert "recompile" in info.value.render()


def test_missing_and_corrupt_plans_are_user_errors(tmp_path):
    with pytest.raises(PlanError, match="no plan found"):
        read_plan(tmp_path / "nope.json")
    bad = tmp_path / "plan.json"
    bad.write_text("{not json")
    with pytest.raises(PlanError, match=r"plan.json:1:2: invalid JSON"):
        read_plan(bad)


def test_secret_placeholders_resolve_only_at_run_time():
    placeholder = secret_placeholder("MIRRORSPEC_SECRET_KEY")
    conf = {"spark.hadoop.fs.azure.key": f"{placeholder}", "other": ["a", placeholder]}
    resolved = resolve_secrets(conf, {"MIRRORSPEC_SECRET_KEY": "s3cr3t"})
    assert resolved == {"spark.hadoop.fs.azure.key": "s3cr3t", "other": ["a", "s3cr3t"]}
    with pytest.raises(PlanError, match="MIRRORSPEC_SECRET_KEY is not set"):
        resolve_secrets(conf, {})
