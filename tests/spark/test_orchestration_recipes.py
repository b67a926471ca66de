"""The recipes of docs/orchestration.md, run as written (read from the page) against a small
project: Dagster with the real package (materializing the assets built from plan.json); the
Airflow recipes twice: in `make test` against the API with stand-ins for `airflow.sdk` and
`PythonOperator` (whose decorators call the functions as written), and, marked `extra`, as DAG
files run by the real Airflow's `airflow dags test` from its own virtualenv (`make test-airflow`
makes it; Airflow's ~140 packages stay out of the project's venv)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from tests.support.project_files import write, write_changes

from mirrorspec.api import FailedRun

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "orchestration.md"
AIRFLOW_VENV = Path(os.environ.get("MIRRORSPEC_AIRFLOW_VENV", ROOT / ".venv-airflow"))


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
    """`airflow.sdk.dag/task` that call the functions as written; a `DAG` context and a
    PythonOperator that keep nothing but the operator's arguments."""
    def decorator(*args, **_kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda func: func

    class DAG:
        def __init__(self, dag_id, **_kwargs):
            self.dag_id = dag_id

        def __enter__(self):
            return self

        def __exit__(self, *_exc):
            return False

    class PythonOperator:
        def __init__(self, task_id, python_callable, op_kwargs=None):
            self.task_id, self.python_callable, self.op_kwargs = task_id, python_callable, op_kwargs

    sdk = types.ModuleType("airflow.sdk")
    sdk.dag, sdk.task, sdk.DAG = decorator, decorator, DAG
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
    counts = operator.python_callable(**operator.op_kwargs)
    assert counts["success"] == 2

    bad = shop(tmp_path / "bad", bad=True)
    monkeypatch.setenv("MIRRORSPEC_PROJECT_DIR", str(bad))
    with pytest.raises(FailedRun, match="shop.customers"):
        exec(compile(recipe("airflow"), "orchestration.md:airflow", "exec", dont_inherit=True), {})



def airflow_dags_test(tmp: Path, project: Path, dag_id: str) -> tuple[subprocess.CompletedProcess,
                                                                      dict[str, tuple[str, int]]]:
    """Both Airflow recipes as DAG files in a throwaway AIRFLOW_HOME (SQLite metadata DB), the
    DAG `dag_id` run once by `airflow dags test` against `project`: the process and each task
    instance's (state, try number) read from the metadata DB."""
    dags = tmp / "dags"
    dags.mkdir(parents=True)
    (dags / "mirrorspec_shop.py").write_text(recipe("airflow"))
    (dags / "mirrorspec_shop_nightly.py").write_text(recipe("airflow-python-operator"))
    # Spark's Python workers: the Airflow venv's (an earlier Spark test in this process set ours)
    inherited = {k: v for k, v in os.environ.items()
                 if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
    env = {**inherited,
           "AIRFLOW_HOME": str(tmp / "home"), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
           "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp / 'home' / 'airflow.db'}",
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           # the recipe's retries=2 would wait Airflow's default 300 s between tries
           "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "0",
           # this tree's mirrorspec, not the copy installed into the venv for its dependencies
           "PYTHONPATH": str(ROOT), "MIRRORSPEC_PROJECT_DIR": str(project)}
    airflow = str(AIRFLOW_VENV / "bin" / "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True)
    done = subprocess.run([airflow, "dags", "test", dag_id], env=env, capture_output=True,
                          text=True, timeout=900)
    with sqlite3.connect(tmp / "home" / "airflow.db") as db:
        rows = db.execute("SELECT task_id, state, try_number FROM task_instance WHERE dag_id = ?",
                          (dag_id,)).fetchall()
    return done, {task: (state, tries) for task, state, tries in rows}


# each DAG: its task instances (state, try number) on a good project, then on one with a bad file
AIRFLOW_OUTCOMES = {
    # the run task retries twice (the recipe's retries=2), then fails; the tests don't run
    "mirrorspec_shop": ({"run_tables": ("success", 1), "test_tables": ("success", 1)},
                        {"run_tables": ("failed", 3), "test_tables": ("upstream_failed", 0)}),
    "mirrorspec_shop_nightly": ({"mirrorspec_run_nightly": ("success", 1)},
                                {"mirrorspec_run_nightly": ("failed", 1)}),
}


@pytest.mark.extra
@pytest.mark.skipif(not (AIRFLOW_VENV / "bin" / "airflow").exists(),
                    reason=f"no Airflow virtualenv at {AIRFLOW_VENV} (`make test-airflow` makes it)")
@pytest.mark.parametrize("dag_id", sorted(AIRFLOW_OUTCOMES))
def test_airflow_recipes_in_real_airflow(tmp_path, dag_id):
    good, bad = AIRFLOW_OUTCOMES[dag_id]
    done, tasks = airflow_dags_test(tmp_path / "af_ok", shop(tmp_path / "ok"), dag_id)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert tasks == good
    run = json.loads((tmp_path / "ok" / "target" / "run_results.json").read_text())
    assert run["counts"]["success"] == 2
    if "test_tables" in tasks:
        tests = json.loads((tmp_path / "ok" / "target" / "test_results.json").read_text())
        assert tests["counts"]["pass"] == 2

    done, tasks = airflow_dags_test(tmp_path / "af_bad", shop(tmp_path / "bad", bad=True), dag_id)
    assert done.returncode == 1
    assert "FailedRun: 1 table(s) failed: shop.customers" in done.stdout + done.stderr
    assert tasks == bad
    run = json.loads((tmp_path / "bad" / "target" / "run_results.json").read_text())
    assert {r["unique_id"]: r["status"] for r in run["results"]} == {
        "shop.orders": "success", "shop.customers": "error"}

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


def test_dagster_downstream_recipe(spark, tmp_path, monkeypatch):
    """The asset after a pass: `orders_silver` (readers.md's DuckDB recipe as `downstream.py`)
    materializes after the mirrored tables and holds shop.orders as the feed left it."""
    dg = pytest.importorskip("dagster")
    import duckdb

    root = shop(tmp_path / "shop")
    project = yaml.safe_load((root / "mirrorspec_project.yml").read_text())
    write(root, {"mirrorspec_project.yml": {**project, "change_data_feed": True}})
    readers = (ROOT / "docs" / "readers.md").read_text()
    duck = re.search(r"<!-- downstream: duckdb -->\n```python\n(.*?)```", readers, re.S)
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "downstream.py").write_text(duck.group(1))
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    monkeypatch.setenv("MIRRORSPEC_PROJECT_DIR", str(root))
    monkeypatch.setenv("MIRRORSPEC_SILVER_DB", str(tmp_path / "silver.duckdb"))
    namespace: dict = {}
    for name in ("dagster", "dagster-downstream"):
        exec(compile(recipe(name), f"orchestration.md:{name}", "exec", dont_inherit=True),
             namespace)
    assets = [namespace["mirrored_tables"], namespace["orders_silver"]]

    def silver() -> list:
        with duckdb.connect(str(tmp_path / "silver.duckdb")) as con:
            return sorted(con.execute("SELECT id, v FROM orders").fetchall())

    done = dg.materialize(assets)
    assert done.success and silver() == [(1, "a")]
    write_changes(root / "landing_zone" / "shop.schema" / "orders", 2,
                  [(1, "A", 1), (2, "b", 0), (3, "c", 4)])
    done = dg.materialize(assets)
    assert done.success and silver() == [(1, "A"), (2, "b"), (3, "c")]
    [event] = [e for e in done.get_asset_materialization_events()
               if e.asset_key == dg.AssetKey("orders_silver")]
    assert event.event_specific_data.materialization.metadata["source_version"].value == 1
