"""dbt-style selection over plan tables (pure Python)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mirrorspec.artifacts.plan import PLAN_VERSION, Plan, SourceSpec, SparkSpec, TablePlan, TableStep
from mirrorspec.base.console import Console
from mirrorspec.base.errors import SelectionError
from mirrorspec.project.selection import (parse_selector, resolve_table, select_tables, select_with_warnings,
                                  split_selectors)


def table(schema, name, source="landing_zone", tags=(), root="/lz", wh="/wh", **extra):
    ws = schema or "dbo"
    folder = f"{schema}.schema/{name}" if schema else name
    steps = [TableStep("MirrorTable")] if source == "landing_zone" else [
        TableStep("PublishFeed"), TableStep("MirrorTable")]
    return TablePlan(unique_id=f"{ws}.{name}", name=name, schema=schema, warehouse_schema=ws,
                     landing_path=f"{root}/{folder}", delta_path=f"{wh}/{ws}/{name}",
                     metadata={"keyColumns": ["id"]}, key_columns=["id"],
                     source=SourceSpec(type=source), steps=steps, tags=list(tags),
                     yaml_file=f"tables/{ws}/{name}.yml", **extra)


def make_plan(tables, root="/lz", wh="/wh"):
    return Plan(plan_version=PLAN_VERSION, project_name="p", project_version="1", profile="p",
                target="dev", landing_zone=root, warehouse=wh, state_path=f"{wh}/_mirrorspec",
                spark=SparkSpec(), partner_events=None, tables=sorted(tables, key=lambda t: t.unique_id))


PLAN = make_plan([
    table("sales", "orders", tags=["nightly", "pii"]),
    table("sales", "order_lines", source="qlik_replicate", tags=["nightly"]),
    table("hr", "employees", source="arcion"),
    table(None, "customers", source="debezium", tags=["pii"]),
])


def ids(selection_or_tables):
    tables = getattr(selection_or_tables, "tables", selection_or_tables)
    return [t.unique_id for t in tables]


def test_empty_selection_selects_every_table_in_plan_order():
    assert ids(select_tables(PLAN)) == ["dbo.customers", "hr.employees", "sales.order_lines",
                                        "sales.orders"]


@pytest.mark.parametrize("selector, expected", [
    ("orders", ["sales.orders"]),
    ("sales.orders", ["sales.orders"]),
    ("SALES.Orders", ["sales.orders"]),
    ("sales.*", ["sales.order_lines", "sales.orders"]),
    ("order*", ["sales.order_lines", "sales.orders"]),
    ("*.employees", ["hr.employees"]),
    ("dbo.customers", ["dbo.customers"]),
    ("customers", ["dbo.customers"]),
    ("source:qlik_replicate", ["sales.order_lines"]),
    ("source:landing_zone", ["sales.orders"]),
    ("tag:pii", ["dbo.customers", "sales.orders"]),
    ("schema:hr", ["hr.employees"]),
    ("path:tables/hr", ["hr.employees"]),
    ("id:sales.order_?ines", ["sales.order_lines"]),
])
def test_single_selectors(selector, expected):
    assert ids(select_tables(PLAN, [selector])) == expected


def test_union_of_space_and_comma_separated_and_repeated_selectors():
    assert ids(select_tables(PLAN, ["orders hr.employees", "tag:pii,source:arcion"])) == [
        "dbo.customers", "hr.employees", "sales.orders"]


def test_exclude_removes_from_selection_and_from_everything():
    assert ids(select_tables(PLAN, ["tag:nightly"], ["source:qlik_replicate"])) == ["sales.orders"]
    assert ids(select_tables(PLAN, (), ["sales.*"])) == ["dbo.customers", "hr.employees"]


def test_split_selectors_flattens():
    assert split_selectors(("a b", "c,d", " ")) == ["a", "b", "c", "d"]
    assert split_selectors("x") == ["x"]
    assert split_selectors(None) == []


def test_unknown_method_is_an_error_naming_it():
    with pytest.raises(SelectionError) as info:
        select_tables(PLAN, ["colour:red"])
    assert "colour" in str(info.value) and "tag:" in str(info.value)


def test_unknown_state_value_is_an_error():
    with pytest.raises(SelectionError, match="state:modified"):
        parse_selector("state:changed")


def test_state_without_state_path_is_an_error():
    with pytest.raises(SelectionError, match="--state"):
        select_tables(PLAN, ["state:modified"])


def test_nothing_selected_warns(capsys):
    import io
    stream = io.StringIO()
    console = Console(log_format="json", stream=stream)
    assert select_with_warnings(PLAN, ["nosuchtable"], console=console) == []
    text = stream.getvalue()
    assert "'nosuchtable' matched no table" in text
    assert "nothing selected" in text


def _write_state(tmp_path: Path, plan: Plan) -> Path:
    target = tmp_path / "prev_target"
    target.mkdir()
    (target / "plan.json").write_text(plan.to_json())
    return target


def test_state_modified_and_new(tmp_path):
    old = make_plan([
        table("sales", "orders", tags=["nightly", "pii"]),
        table("sales", "order_lines", source="qlik_replicate", tags=["nightly"]),
        table(None, "customers", source="debezium", tags=["pii"]),
    ])
    state = _write_state(tmp_path, old)
    # orders changes its keys, employees is new, the others are unchanged
    new_orders = replace(PLAN.table("sales.orders"), key_columns=["id", "line"],
                         metadata={"keyColumns": ["id", "line"]})
    current = make_plan([new_orders, PLAN.table("sales.order_lines"), PLAN.table("hr.employees"),
                         PLAN.table("dbo.customers")])
    assert ids(select_tables(current, ["state:modified"], state_path=state)) == [
        "hr.employees", "sales.orders"]
    assert ids(select_tables(current, ["state:new"], state_path=state)) == ["hr.employees"]
    # the plan.json file itself can be given too
    assert ids(select_tables(current, ["state:new"], state_path=state / "plan.json")) == [
        "hr.employees"]
    # combined with other selectors as a union, and with exclude
    assert ids(select_tables(current, ["state:modified"], ["source:arcion"],
                             state_path=state)) == ["sales.orders"]


def test_state_ignores_where_the_project_sits_on_disk(tmp_path):
    moved = make_plan([table("sales", "orders", tags=["nightly", "pii"], root="/ci/x/lz",
                             wh="/ci/x/wh")], root="/ci/x/lz", wh="/ci/x/wh")
    here = make_plan([table("sales", "orders", tags=["nightly", "pii"])])
    state = _write_state(tmp_path, moved)
    assert ids(select_tables(here, ["state:modified"], state_path=state)) == []


def test_state_path_without_plan_is_an_error(tmp_path):
    with pytest.raises(SelectionError, match="no plan.json"):
        select_tables(PLAN, ["state:modified"], state_path=tmp_path)


def test_resolve_table_by_id_name_and_ambiguity():
    assert resolve_table(PLAN, "orders").unique_id == "sales.orders"
    assert resolve_table(PLAN, "Sales.Orders").unique_id == "sales.orders"
    plan = make_plan([table("a", "t"), table("b", "t")])
    with pytest.raises(SelectionError, match="ambiguous"):
        resolve_table(plan, "t")
    with pytest.raises(SelectionError, match="no table 'zzz'"):
        resolve_table(plan, "zzz")


def _results(folder: Path, run=(), tests=()) -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    if run:
        (folder / "run_results.json").write_text(json.dumps(
            {"results": [{"unique_id": u, "status": s} for u, s in run]}))
    if tests:
        (folder / "test_results.json").write_text(json.dumps(
            {"results": [{"table": u, "status": s} for u, s in tests]}))
    return folder


def test_result_selectors_read_the_last_run_and_test_results(tmp_path):
    target = _results(tmp_path / "target",
                      run=[("sales.orders", "error"), ("hr.employees", "skipped"),
                           ("dbo.customers", "success")],
                      tests=[("dbo.customers", "fail"), ("sales.order_lines", "error")])
    assert ids(select_tables(PLAN, ["result:error"], results_dir=target)) == [
        "sales.order_lines", "sales.orders"]
    assert ids(select_tables(PLAN, ["result:fail"], results_dir=target)) == ["dbo.customers"]
    assert ids(select_tables(PLAN, ["result:error,result:skipped"], ["sales.*"],
                             results_dir=target)) == ["hr.employees"]
    # --state wins over the project's target folder
    other = _results(tmp_path / "prod", run=[("hr.employees", "error")])
    assert ids(select_tables(PLAN, ["result:error"], state_path=other,
                             results_dir=target)) == ["hr.employees"]


def test_result_selector_without_results_or_with_a_bad_status_is_an_error(tmp_path):
    with pytest.raises(SelectionError, match="previous run_results.json") as info:
        select_tables(PLAN, ["result:error"], results_dir=tmp_path)
    assert str(tmp_path) in info.value.render()
    with pytest.raises(SelectionError, match="unknown result selector 'result:broken'"):
        select_tables(PLAN, ["result:broken"])
