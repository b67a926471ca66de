"""The published JSON Schemas of plan.json, run_results.json, test_results.json, tables.json and
replicator.json hold what the code writes, field for field (tests/spark/test_api_run.py checks the
files a real run writes too)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import jsonschema
import pytest

from mirrorspec.api import ARTIFACT_SCHEMAS, artifact_schema
from mirrorspec.compile import validate_project
from mirrorspec.artifacts.plan import PLAN_VERSION, TablePlan
from mirrorspec.base.errors import UsageError
from mirrorspec.artifacts.run_results import RunResults, StepTiming, TableRunResult
from mirrorspec.artifacts.data_test_results import DataTestResult, TestResults
from mirrorspec.artifacts.status import write_status

REPO = Path(__file__).resolve().parents[3]


def check(name: str, doc: dict) -> None:
    validator = jsonschema.Draft202012Validator(artifact_schema(name))
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert not problems, problems


def test_every_schema_is_a_valid_json_schema_and_published_at_the_top():
    for name, file_name in ARTIFACT_SCHEMAS.items():
        jsonschema.Draft202012Validator.check_schema(artifact_schema(name))
        assert (REPO / "schemas" / file_name).is_file()
    with pytest.raises(UsageError, match="one of plan"):
        artifact_schema("manifest")


@pytest.mark.parametrize("project", sorted(p.name for p in (REPO / "projects").iterdir()
                                           if (p / "mirrorspec_project.yml").is_file()))
def test_plan_json_of_every_example_project(project):
    result = validate_project(REPO / "projects" / project, check_landing=False)
    check("plan", json.loads(result.files["plan.json"]))


def test_plan_schema_names_every_plan_field():
    schema = artifact_schema("plan")
    assert schema["properties"]["plan_version"]["const"] == PLAN_VERSION
    assert set(schema["$defs"]["table"]["required"]) == {f.name for f in fields(TablePlan)}


def test_run_results():
    results = RunResults(command="run", args={"select": ["a"], "vars": ["env"]})
    ok = TableRunResult("sales.orders", mirror_status="Replicating", files_applied=["1.parquet"],
                        rows_inserted=3, delta_version=0,
                        timing=[StepTiming("mirror", "2026-01-01T00:00:00.000000Z",
                                           "2026-01-01T00:00:01.000000Z", 1.0)])
    bad = TableRunResult("sales.bad")
    bad.fail("1.parquet: bad marker", "BadFile")
    skipped = TableRunResult("sales.later", status="skipped", skip_reason="--fail-fast")
    results.results = [ok, bad, skipped]
    doc = json.loads(json.dumps(results.to_dict()))
    check("run_results", doc)
    schema = artifact_schema("run_results")
    assert set(schema["$defs"]["table"]["required"]) == {f.name for f in fields(TableRunResult)}
    doc["results"][0]["status"] = "fine"
    with pytest.raises(AssertionError, match="'fine' is not one of"):
        check("run_results", doc)


def test_test_results():
    results = TestResults([DataTestResult("unique_sales.orders_id", "sales.orders", "unique",
                                          "error", "fail", 2, "2 duplicate keys", {"columns": ["id"]}),
                           DataTestResult("not_null_sales.orders_v", "sales.orders", "not_null",
                                          "warn", "pass")])
    check("test_results", json.loads(json.dumps(results.to_dict())))
    item = artifact_schema("test_results")["properties"]["results"]["items"]
    assert set(item["required"]) == {f.name for f in fields(DataTestResult)}


def test_monitoring_json(tmp_path):
    outcomes = [
        {"schema": "sales", "name": "orders", "status": "Replicating", "processed_rows": 3,
         "processed_bytes": 100, "seconds": 1.5},
        {"schema": "sales", "name": "gap", "status": "Waiting", "awaiting": "00000000000000000003",
         "warnings": ["ignored x.txt"]},
        {"schema": None, "name": "bad", "status": "Failed",
         "error": {"errorCode": "BadFile", "message": "marker 3"}},
    ]
    write_status(str(tmp_path), outcomes)
    check("tables", json.loads((tmp_path / "tables.json").read_text()))
    check("replicator", json.loads((tmp_path / "replicator.json").read_text()))
