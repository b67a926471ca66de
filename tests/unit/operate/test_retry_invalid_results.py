"""`retry` on a run_results.json of another shape: one located error ("invalid
run_results.json", the file, the JSON path of the bad field), exit 1; never a crash (exit 2)
nor a selector built from a non-string unique_id."""

from __future__ import annotations

import json

import pytest

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.operate.retry import retry_selection
from mirrorspec.artifacts.run_results import RunResults, TableRunResult, invalid_run_results
from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write


def _valid() -> dict:
    results = RunResults(command="run", args={"threads": 2})
    results.results.append(TableRunResult("sales.orders", status="error", error="boom"))
    return results.to_dict()


def _broken(path: list, value) -> dict:
    doc = _valid()
    holder = doc
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return doc


@pytest.mark.parametrize("doc,where", [
    ([1, 2], "$: [1, 2] is not of type 'object'"),
    (_broken(["results", 0, "unique_id"], 5), "$.results[0].unique_id: 5 is not of type"),
    (_broken(["results", 0, "unique_id"], ["a"]), "$.results[0].unique_id: ['a'] is not of type"),
    (_broken(["results"], {"a": 1}), "$.results: {'a': 1} is not of type 'array'"),
    (_broken(["results", 0, "status"], "boom"), "$.results[0].status: 'boom' is not one of"),
    (_broken(["args"], "x"), "$.args: 'x' is not of type 'object'"),
])
def test_a_bad_field_is_named_by_its_json_path(tmp_path, doc, where):
    (tmp_path / "run_results.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(MirrorspecError) as caught:
        retry_selection(tmp_path)
    assert caught.value.message.startswith(
        f"invalid run_results.json: {tmp_path / 'run_results.json'}: {where}")


def test_what_run_writes_is_valid_and_retried(tmp_path):
    assert invalid_run_results(_valid()) is None
    (tmp_path / "run_results.json").write_text(json.dumps(_valid()), encoding="utf-8")
    assert retry_selection(tmp_path).select == ("id:sales.orders",)


def test_the_cli_says_it_in_one_line_with_exit_1(tmp_path):
    project = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "tables/shop.yml": {"tables": [{"name": "orders", "key_columns": ["id"]}]}})
    (project / "target").mkdir()
    (project / "target" / "run_results.json").write_text(
        json.dumps({"command": "run", "results": "nope"}), encoding="utf-8")
    done = run_without_jvm("retry", "--project-dir", str(project), cwd=tmp_path,
                           log_format="text")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "invalid run_results.json" in done.stderr + done.stdout
    assert "Internal error" not in done.stderr + done.stdout
