"""Stage validate: every JSON Schema error, located, with plain messages and suggestions."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorspec.load.validate import _fast_check, _validator, validate_document
from mirrorspec.base.suggest import suggest
from mirrorspec.load.yaml_doc import parse_document

VALID_TABLES = """\
tables:
  - name: orders
    schema: sales
    description: d
    key_columns: [id, part]
    file_detection: last_update_time
    upsert_default: true
    format: delimited_text
    delimited:
      extension: tsv
      first_row_as_header: true
      row_separator: "\\n"
      column_separator: "\\t"
      quote_character: ""
      escape_character: "\\\\"
      null_value: N/A
      encoding: UTF-8
    columns:
      - {name: id, type: Int64, nullable: false, description: x}
      - {name: part, type: Int32}
    source: {type: qlik_replicate, path: feed, options: {decimal: string}}
    tags: [a, b]
    recreate: false
    tests:
      - unique
      - not_null: {columns: [id]}
      - accepted_values: {column: id, values: [1, 2], severity: warn}
      - relationships: {column: id, to: sales.x, field: y}
      - row_count: {}
      - freshness: {max_age_seconds: 60}
"""


def check(text: str, kind: str = "tables"):
    problems = []
    doc = parse_document(text, "t.yml", None, problems)
    assert problems == []
    return [str(p) for p in validate_document(doc, kind)]


def test_a_full_valid_table_file_has_no_problems():
    assert check(VALID_TABLES) == []


def test_each_source_type_has_its_own_options():
    text = """\
tables:
  - name: a
    source:
      type: aws_dms
      path: feed
      options: {csvDelimiter: ";", delimiter: ab, quote: "''", header: "yes"}
  - name: b
    source: {type: debezium, path: feed, options: {time_unit: s}}
  - name: c
    source: {type: parquet, path: feed, options: {header: true}}
  - name: d
    source: {type: csv, path: feed, options: {header: true, delimiter: "\\\\t"}}
"""
    assert check(text) == [
        "t.yml:6:17: tables[0].source.options.csvDelimiter: unknown key 'csvDelimiter' "
        "(did you mean 'delimiter'?)",
        't.yml:6:47: tables[0].source.options.delimiter: "ab" is not valid: One character; '
        "\\t for tab.",
        """t.yml:6:58: tables[0].source.options.quote: "''" must be one character or empty""",
        't.yml:6:72: tables[0].source.options.header: expected true or false, got a string "yes"'
        "\n  hint: write true or false: yes/no/on/off are text in YAML 1.2",
        't.yml:8:63: tables[1].source.options.time_unit: "s" is not one of "ms", "us", "ns" '
        "(did you mean 'us'?)",
        "t.yml:10:51: tables[2].source.options.header: unknown key 'header'",
    ]
    assert not _fast_check("tables")(parse_document(text, "t.yml", None, []).data)


def test_unknown_key_points_at_the_key_with_a_suggestion():
    assert check("tables:\n  - name: a\n    key_colums: [id]\n") == [
        "t.yml:3:5: tables[0].key_colums: unknown key 'key_colums' (did you mean 'key_columns'?)"]


def test_wrong_type_says_what_was_expected():
    assert check("tables:\n  - name: a\n    upsert_default: 'yes'\n") == [
        't.yml:3:21: tables[0].upsert_default: expected true or false, got a string "yes"'
        '\n  hint: write true or false: yes/no/on/off are text in YAML 1.2']


def test_enum_typo_gets_a_suggestion():
    problems = check("tables:\n  - name: a\n    format: Parquet\n")
    assert len(problems) == 1
    assert problems[0].startswith('t.yml:3:13: tables[0].format: "Parquet" is not one of')
    assert "(did you mean 'parquet'?)" in problems[0]


def test_unknown_data_type_is_rejected():
    problems = check("tables:\n  - name: a\n    columns:\n      - {name: c, type: Decimal}\n")
    assert len(problems) == 1 and "tables[0].columns[0].type" in problems[0]
    assert '"Decimal" is not one of "Double"' in problems[0]


@pytest.mark.parametrize("key,value,expected", [
    ("row_separator", "';'", "RowSeparator"),
    ("column_separator", "'#'", "ColumnSeparator"),
    ("quote_character", "'`'", "QuoteCharacter"),
    ("escape_character", "'!'", "EscapeCharacter"),
    ("first_row_as_header", "false", "must be true"),
])
def test_delimited_properties_are_limited_to_the_seed_values(key, value, expected):
    problems = check(f"tables:\n  - name: a\n    format: csv\n    delimited:\n      {key}: {value}\n")
    assert len(problems) == 1 and f"tables[0].delimited.{key}" in problems[0]
    assert problems[0].startswith("t.yml:5:")


def test_unquoted_backslash_escape_gets_a_hint():
    problems = check("tables:\n  - name: a\n    delimited:\n      column_separator: \\t\n")
    assert len(problems) == 1 and 'write the character in double quotes: "\\t"' in problems[0]


def test_required_key_missing():
    assert check("tables:\n  - schema: s\n") == [
        "t.yml:2:5: tables[0]: missing required key 'name'"]


def test_every_error_is_reported_in_file_order():
    problems = check("tables:\n  - name: a\n    formt: csv\n  - name: 5\n    tags: x\n"
                     "  - {name: c, tests: [uniq]}\n")
    assert [p.split(":")[1] for p in problems] == ["3", "4", "5", "6"]


def test_test_items_are_one_key_mappings():
    problems = check("tables:\n  - name: a\n    tests:\n      - {unique: {}, not_null: {}}\n")
    assert len(problems) == 1 and "a test is one key" in problems[0]
    problems = check("tables:\n  - name: a\n    tests:\n      - unique: {colums: [a]}\n")
    assert "unknown key 'colums' (did you mean 'columns'?)" in problems[0]


def test_project_and_profiles_schemas():
    assert check("name: p\nversion: 1\ntable-paths: [t]\ntarget-path: out\nvars: {a: 1}\n"
                 "defaults: {format: csv, tags: [x]}\n"
                 "partner: {name: n, source_type: SQL, source_version: 2019, "
                 "additional_information: {k: v}}\n", "project") == []
    assert check("name: p\ndefaults: {name: x}\n", "project") == [
        "t.yml:2:12: defaults.name: unknown key 'name'"]
    assert check("p:\n  target: dev\n  outputs:\n    dev:\n      landing_zone: lz\n"
                 "      warehouse: s3a://b/w\n      spark: {master: 'local[2]', remote: 'sc://h:1',"
                 " conf: {a: 1, b: true}}\n", "profiles") == []
    problems = check("p:\n  outputs:\n    dev: {landing: x}\n", "profiles")
    assert problems == ["t.yml:3:11: p.outputs.dev.landing: unknown key 'landing' "
                        "(did you mean 'landing_zone'?)"]


def test_suggest():
    assert suggest("Format", ["format", "schema"]) == " (did you mean 'format'?)"
    assert suggest("qlik", ["landing_zone", "qlik_replicate"]) == " (did you mean 'qlik_replicate'?)"
    assert suggest("zzz", ["format"]) == ""


# --- the compiled fast check never disagrees with jsonschema ----------------------------------

def _json_values():
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                       st.sampled_from(["", "x", "id", "csv", "Int32", "\t", "tsv", "unique",
                                        "warn", "sc://h", "landing_zone"]))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
            ["name", "columns", "type", "unique", "values", "column", "x"]), inner, max_size=3)),
        max_leaves=6)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


def _mutate(doc, path, new, mode):
    doc = copy.deepcopy(doc)
    if not path:
        return new
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    if mode == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    elif mode == "add" and isinstance(parent, dict):
        parent[f"extra_{len(parent)}"] = new
    else:
        parent[path[-1]] = new
    return doc


BASE = {
    "tables": parse_document(VALID_TABLES, "t", None, []).data,
    "project": {"name": "p", "version": "1", "table-paths": ["t"], "vars": {"a": 1},
                "defaults": {"format": "csv", "source": {"type": "csv", "path": "x"}},
                "partner": {"name": "n", "additional_information": {"a": [1]}}},
    "profiles": {"p": {"target": "dev", "outputs": {"dev": {"landing_zone": "x", "spark": {
        "master": "m", "conf": {"a": 1}}}}}},
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(BASE)), data=st.data())
def test_fast_check_agrees_with_jsonschema(kind, data):
    base = BASE[kind]
    assert _fast_check(kind)(base)
    paths = list(_paths(base))
    path = data.draw(st.sampled_from(paths))
    mode = data.draw(st.sampled_from(["replace", "delete", "add"]))
    new = data.draw(_json_values())
    doc = _mutate(base, path, new, mode)
    expected = not any(True for _ in _validator(kind).iter_errors(doc))
    assert _fast_check(kind)(doc) == expected, json.dumps(doc, default=str)
