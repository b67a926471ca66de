"""Changes to a table's own properties: its source, the change data feed switch, `recreate`,
description, tags and data tests."""

from __future__ import annotations

import json
from typing import Any

from mirrorspec.artifacts.plan import TablePlan
from mirrorspec.project.diff.normalise import kafka_identity, show, source_label, union_keys
from mirrorspec.project.diff.result import Change


def table_property_changes(before: TablePlan, after: TablePlan) -> list[Change]:
    """The source, the change data feed switch, `recreate`, the description, tags and
    data tests."""
    changes = []
    old_source = (before.source.type, before.source.options, kafka_identity(before))
    new_source = (after.source.type, after.source.options, kafka_identity(after))
    if old_source != new_source:
        changes.append(Change("source_changed", None, source_label(before), source_label(after)))
    if bool(before.change_data_feed) != bool(after.change_data_feed):
        changes.append(Change("change_data_feed_on" if after.change_data_feed
                              else "change_data_feed_off", None,
                              bool(before.change_data_feed), bool(after.change_data_feed)))
    if bool(before.recreate) != bool(after.recreate):
        changes.append(Change("recreate_changed", None, bool(before.recreate),
                              bool(after.recreate)))
    if (before.description or None) != (after.description or None):
        changes.append(Change("description_changed", None, before.description,
                              after.description))
    if sorted(before.tags or []) != sorted(after.tags or []):
        changes.append(Change("tags_changed", None, list(before.tags), list(after.tags)))
    changes += _test_changes(before.tests or [], after.tests or [])
    return changes


def _test_changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Change]:
    """One change per data test added, removed or changed; `subject` names the test
    (`accepted_values(status)`), before/after hold what differs (`severity: error`)."""
    old_by, new_by = _tests_by_identity(old), _tests_by_identity(new)
    changes = []
    for key, test in old_by.items():
        other = new_by.get(key)
        if other is None:
            changes.append(Change("tests_changed", _test_label(test), "present", None))
        elif other != test:
            names = [n for n in union_keys(test, other) if test.get(n) != other.get(n)]
            changes.append(Change("tests_changed", _test_label(test),
                                  _test_params(test, names), _test_params(other, names)))
    for key, test in new_by.items():
        if key not in old_by:
            changes.append(Change("tests_changed", _test_label(test), None,
                                  _test_params(test, [n for n in test if n != "type"])
                                  or "present"))
    return changes


def _tests_by_identity(tests: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for test in tests:
        key: tuple[Any, ...] = (test.get("type"),
                                json.dumps(test.get("columns") or test.get("column")),
                                test.get("to"))
        while key in out:  # the same test twice: keep both
            key += ("again",)
        out[key] = test
    return out


def _test_label(test: dict[str, Any]) -> str:
    columns = test.get("columns") or ([test["column"]] if test.get("column") else [])
    label = f"{test.get('type')}({', '.join(str(c) for c in columns)})"
    if test.get("to"):
        label += f" to {test['to']}" + (f".{test['field']}" if test.get("field") else "")
    return label


def _test_params(test: dict[str, Any], names: list[str]) -> str:
    return "; ".join(f"{name}: {show(test.get(name))}" for name in names)
