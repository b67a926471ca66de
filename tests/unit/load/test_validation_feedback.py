"""What a user sees for a broken project: every problem in one pass, YAML syntax errors with
the line and a caret, YAML 1.2 booleans, a DataType did-you-mean."""

from __future__ import annotations

import pytest

from mirrorspec.compile import validate_project
from mirrorspec.base.errors import ProjectError
from mirrorspec.load.yaml_doc import parse_document


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def project(tmp_path, tables_yaml: str):
    root = tmp_path / "p"
    (root / "tables").mkdir(parents=True)
    (root / "mirrorspec_project.yml").write_text("name: p\n")
    (root / "tables" / "t.yml").write_text(tables_yaml)
    return root


def problems_of(root) -> list[str]:
    with pytest.raises(ProjectError) as info:
        validate_project(root)
    return [p.render() for p in info.value.problems]


# --- one pass -----------------------------------------------------------------------------------

BROKEN = """\
tables:
  - name: orders
    format: csv
    upsert_default: yes
    key_columns: [id]
    columns:
      - name: id
        type: Integer
      - name: ts
    tests:
      - not_null: {columns: [nope]}
      - relationships: {column: id, to: customers}
  - name: customers
    key_colums: [id]
"""


def test_schema_errors_and_cross_checks_come_out_together(tmp_path):
    found = problems_of(project(tmp_path, BROKEN))
    text = "\n".join(found)
    # schema errors …
    assert "tables[0].upsert_default: expected true or false" in text
    assert "tables[0].columns[0].type: \"Integer\" is not one of" in text
    assert "tables[1].key_colums: unknown key" in text
    # … and the cross-checks of the same (partly invalid) tables, in the same report
    assert "column 'ts' needs a type" in text
    assert "not_null: 'nope' is not a declared column" in text
    # the table with a schema error still resolves as a relationships target
    assert "no table 'customers'" not in text
    # the pruned `type` is not reported a second time as "needs a type"
    assert "column 'id' needs a type" not in text
    assert len(found) == 5, found


def test_a_table_missing_its_name_is_left_out_of_the_cross_checks(tmp_path):
    found = problems_of(project(tmp_path, "tables:\n  - format: csv\n    columns:\n"
                                          "      - name: a\n"))
    assert found == ["p/tables/t.yml:2:5: tables[0]: missing required key 'name'"]


# --- YAML syntax --------------------------------------------------------------------------------

def syntax_error(text: str):
    problems = []
    parse_document(text, "t.yml", None, problems)
    assert len(problems) == 1
    return problems[0]


def test_unquoted_colon_shows_the_line_a_caret_and_a_hint():
    problem = syntax_error("tables:\n  - name: a\n    description: note: here\n")
    lines = problem.render().splitlines()
    assert lines[0].startswith("t.yml:3:22: invalid YAML: mapping values are not allowed")
    assert lines[1] == "    3 |     description: note: here"
    assert lines[2] == "      |                      ^"
    assert lines[2].index("^") == lines[1].index("note: here") + 4  # under the second ':'
    assert 'must be quoted' in problem.hint


def test_bad_indentation_gets_an_indentation_hint():
    problem = syntax_error("tables:\n  - name: a\n   schema: x\n")
    assert problem.location.line == 3
    assert "indentation" in problem.hint


def test_a_list_item_among_keys_gets_a_hint_about_the_dash():
    problem = syntax_error("columns:\n  name: b\n  - name: c\n")
    assert problem.location.line == 3 and "`- `" in problem.hint


def test_a_key_without_colon_points_at_that_key():
    problem = syntax_error("tables:\n  - name: a\n    key_columns\n    schema: s\n")
    assert problem.location.line == 3
    assert "    3 |     key_columns" in problem.render()
    assert "`: `" in problem.hint


# --- YAML 1.2 booleans, DataType suggestions ----------------------------------------------------

@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "Yes", "y", "N"])
def test_yaml_11_booleans_stay_strings(word):
    problems = []
    doc = parse_document(f"a: {word}\n{word}: 1\n", "t.yml", None, problems)
    assert problems == [] and doc.data == {"a": word, word: 1}


def test_true_false_and_plain_numbers_are_still_typed():
    problems = []
    doc = parse_document("a: true\nb: False\nc: 12\nd: 1_000\ne: 1:30\nf: 0x1F\n", "t.yml",
                         None, problems)
    assert doc.data == {"a": True, "b": False, "c": 12, "d": "1_000", "e": "1:30", "f": 31}


def test_upsert_default_yes_gets_the_typed_error(tmp_path):
    found = problems_of(project(tmp_path, "tables:\n  - name: a\n    key_columns: [id]\n"
                                          "    upsert_default: yes\n"))
    assert found == ['p/tables/t.yml:4:21: tables[0].upsert_default: expected true or false, got '
                     'a string "yes"\n  hint: write true or false: yes/no/on/off are text in '
                     'YAML 1.2']


@pytest.mark.parametrize("written,meant", [("Integer", "'Int32' or 'Int64'"),
                                           ("long", "'Int64'"), ("varchar(20)", "'String'"),
                                           ("int64", "'Int64'"), ("timestamp", "'DateTime'")])
def test_unknown_data_type_gets_a_did_you_mean(tmp_path, written, meant):
    found = problems_of(project(tmp_path, "tables:\n  - name: a\n    columns:\n"
                                          f"      - {{name: id, type: '{written}'}}\n"))
    assert len(found) == 1 and found[0].endswith(f"(did you mean {meant}?)"), found
