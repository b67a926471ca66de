"""The recipes of docs/orchestration.md, run as written (read from the page) against a small
project: Dagster with the real package (materializing the assets built from plan.json); the
Airflow recipes against the API with stand-ins for `airflow.sdk` and `PythonOperator` (Airflow
itself, ~80 packages, is not installed here), whose decorators call the functions as written."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest
from project_files import write, write_changes

from mirrorspec.api import FailedRun

DOC = Path(__file__).resolve().parents[2] / "docs" / "orchestration.md"


def recipe(name: str) -> str:
    match = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```python\n(.*?)```", DOC.read_text(),
                      re.S)
    assert match, name
    return match.group(1)


def shop(root: Path, bad: bool = False) -> Path:
    output = {"landing_zone": "landing_zone", "warehouse": "warehouse",
              "spark": {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": 1}}}
    write(root, {
        "mirrorspec_project.yml": {"name": "recipes", "version": "1"},
        "profiles.yml": {"recipes": {"target": "dev", "outputs": {"dev": output, "prod": output}}},
        "tables/shop.yml": {"tables": [
            {"name": name, "schema": "shop", "key_columns": ["id"], "tags": ["nightly"],
             "columns": [{"name": "id", "type": "Int32"}, {"name": "v", "type": "String"}],
             "tests": ["unique"]} for name in ("orders", "customers")]},
    })
    write_changes(root / "landing_zone" / "shop.schema" / "orders", 1, [(1, "a", 0)])
    write_changes(root / "landing_zone" / "shop.schema" / "customers", 1,
                  [(1, "x", 3 if bad else 0)])
    return root


@pytest.fixture()
def fake_airflow(monkeypatch):
    """`airflow.sdk.dag/task` that call the functions as written; a PythonOperator that keeps
    its arguments."""
    def decorator(*args, **_kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda func: func

    class PythonOperator:
        def __init__(self, task_id, python_callable, op_kwargs=None):
            self.task_id, self.python_callable, self.op_kwargs = task_id, python_callable, op_kwargs

    sdk = types.ModuleType("airflow.sdk")
    sdk.dag, sdk.task = decorator, decorator
    python = types.ModuleType("airflow.providers.standard.operators.python")
    python.PythonOperator = PythonOperator
    for name in ("airflow", "airflow.providers", "airflow.providers.standard",
                 "airflow.providers.standard.operators"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "airflow.sdk", sdk)
    monkeypatch.setitem(sys.modules, "airflow.providers.standard.operators.python", python)


def test_airflow_recipes(spark, tmp_path, monkeypatch, fake_airflow):
    root = shop(tmp_path / "ok")
    monkeypatch.setenv("MIRRORSPEC_PROJECT_DIR", str(root))
    exec(compile(recipe("airflow"), "orchestration.md:airflow", "exec", dont_inherit=True), {})
    run = json.loads((root / "target" / "run_results.json").read_text())
    assert run["counts"]["success"] == 2
    assert json.loads((root / "target" / "test_results.json").read_text())["counts"]["pass"] == 2

    namespace: dict = {}
    exec(compile(recipe("airflow-python-operator"), "orchestration.md:operator", "exec", dont_inherit=True),
         namespace)
    operator = namespace["run_nightly"]
    counts = operator.python_callable(**{**operator.op_kwargs, "project_dir": str(root)})
    assert counts["success"] == 2

    bad = shop(tmp_path / "bad", bad=True)
    monkeypatch.setenv("MIRRORSPEC_PROJECT_DIR", str(bad))
    with pytest.raises(FailedRun, match="shop.customers"):
        exec(compile(recipe("airflow"), "orchestration.md:airflow", "exec", dont_inherit=True), {})


def test_dagster_recipe(spark, tmp_path, monkeypatch):
    dg = pytest.importorskip("dagster")
    root = shop(tmp_path / "shop", bad=True)
    monkeypatch.setenv("MIRRORSPEC_PROJECT_DIR", str(root))
    namespace: dict = {}
    exec(compile(recipe("dagster"), "orchestration.md:dagster", "exec", dont_inherit=True), namespace)
    assets = namespace["mirrored_tables"]
    assert {tuple(k.path) for k in assets.keys} == {("shop", "orders"), ("shop", "customers")}

    # a subset: only shop.orders runs, and is materialized with its outcome
    done = dg.materialize([assets], selection=[dg.AssetKey(["shop", "orders"])])
    assert done.success
    [event] = done.get_asset_materialization_events()
    materialization = event.event_specific_data.materialization
    assert materialization.asset_key == dg.AssetKey(["shop", "orders"])
    assert materialization.metadata["rows_inserted"].value == 1
    run = json.loads((root / "target" / "run_results.json").read_text())
    assert [r["unique_id"] for r in run["results"]] == ["shop.orders"]

    # everything: shop.customers fails, so the step fails and only orders is materialized
    done = dg.materialize([assets], raise_on_error=False)
    assert not done.success
    assert [e.asset_key for e in done.get_asset_materialization_events()] == [
        dg.AssetKey(["shop", "orders"])]
