"""Every public function of mirrorspec.api, every parameter given a value of the wrong type:
a MirrorspecError subclass (never AttributeError/TypeError) whose message names the parameter
and no CLI flag, raised before any work (compile, Spark). A parameter added later without a
check fails here."""

from __future__ import annotations

import inspect
import re

import pytest

from mirrorspec import api
from mirrorspec.base.errors import MirrorspecError
from tests.support.project_files import write


class Wrong:
    def __repr__(self) -> str:
        return "<wrong>"


WRONG = Wrong()


@pytest.fixture()
def project(tmp_path, monkeypatch):
    root = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "tables/shop.yml": {"tables": [{"name": "orders", "key_columns": ["id"]}]}})

    def no_work(self):
        raise AssertionError("an argument reached the work unchecked")

    monkeypatch.setattr(api.Project, "_project", no_work)
    return root


def _calls(project, tmp_path):
    """(name, function, the valid arguments it needs)."""
    p = api.Project(project)
    calls = [("Project", api.Project, {"path": project}),
             ("artifact_schema", api.artifact_schema, {"name": "plan"}),
             ("mirror_landing_zone", api.mirror_landing_zone,
              {"landing_zone": str(tmp_path / "missing"), "warehouse": str(tmp_path / "wh")}),
             ("lint_landing_zone", api.lint_landing_zone,
              {"landing_zone": str(tmp_path / "missing")})]
    for name in ("compile", "run", "retry", "test", "status", "show", "changes", "history",
                 "lint", "diff"):
        calls.append((f"Project.{name}", getattr(p, name),
                      {"table": "orders"} if name in ("show", "changes", "history") else {}))
    calls.append(("Project.export", p.export, {"table": "orders", "to": str(tmp_path / "o.csv")}))
    calls.append(("Project.maintain", p.maintain, {}))
    calls.append(("Project.reconcile", p.reconcile, {"table": "orders",
                                                      "against": str(tmp_path / "snap")}))
    calls.append(("Project.replay", p.replay, {"table": "orders"}))
    calls.append(("Project.docs", p.docs, {}))
    return calls


def _cases(project, tmp_path):
    for name, function, valid in _calls(project, tmp_path):
        for parameter in inspect.signature(function).parameters:
            yield name, function, valid, parameter


def test_every_parameter_is_swept(project, tmp_path):
    swept = {(name, parameter) for name, _f, _v, parameter in _cases(project, tmp_path)}
    assert {n for n in api.__all__ if callable(getattr(api, n)) and not isinstance(
        getattr(api, n), type)} <= {name for name, _ in swept} | {"EventCallback"}
    assert ("Project.show", "timestamp") in swept and ("Project", "profiles_dir") in swept


def test_a_wrong_type_is_a_located_usage_error(project, tmp_path):
    for name, function, valid, parameter in _cases(project, tmp_path):
        with pytest.raises(MirrorspecError) as caught:
            function(**{**valid, parameter: WRONG})
        shown = caught.value.render()
        assert parameter in caught.value.message, (name, parameter, shown)
        assert not re.search(r"(?<![\w-])--[a-z]", shown), (name, parameter, shown)


@pytest.mark.parametrize("call,parameter", [
    (lambda p: p.show(None), "table"),
    (lambda p: p.show("orders", timestamp="next tuesday"), "timestamp"),
    (lambda p: p.show("orders", timestamp=1700000000), "timestamp"),
    (lambda p: api.artifact_schema(["plan"]), "name"),
    (lambda p: p.run(state=p.path), "state"),  # a folder without plan.json
])
def test_the_reported_cases(project, call, parameter):
    with pytest.raises(api.UsageError) as caught:
        call(api.Project(project))
    assert f"{parameter}=" in caught.value.message and "--" not in caught.value.render()
