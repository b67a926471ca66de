"""Stage load: YAML → data that locates every key; duplicate keys, syntax errors, tags."""

from __future__ import annotations

from pathlib import Path

from mirrorspec.load.yaml_doc import format_key_path, load_document, parse_document


def parse(text: str, name: str = "t.yml"):
    problems = []
    doc = parse_document(text, name, None, problems)
    return doc, problems


def test_data_and_positions_of_keys_and_values():
    doc, problems = parse("name: x\ntables:\n  - name: orders\n    key_columns: [id, part]\n")
    assert problems == []
    assert doc.data == {"name": "x", "tables": [{"name": "orders", "key_columns": ["id", "part"]}]}
    loc = doc.location(("tables", 0, "key_columns"), at_key=True)
    assert (loc.file, loc.line, loc.col, loc.key_path) == ("t.yml", 4, 5, "tables[0].key_columns")
    value = doc.location(("tables", 0, "key_columns", 1))
    assert (value.line, value.col) == (4, 23)
    item = doc.location(("tables", 0))
    assert (item.line, item.col) == (3, 5)


def test_missing_path_falls_back_to_nearest_parent_key():
    doc, _ = parse("tables:\n  - name: orders\n")
    loc = doc.location(("tables", 0, "columns", 3, "name"))
    assert (loc.line, loc.col) == (2, 5)
    assert loc.key_path == "tables[0].columns[3].name"


def test_duplicate_key_is_reported_with_both_lines():
    doc, problems = parse("tables:\n  - name: a\n    format: csv\n    format: parquet\n")
    assert len(problems) == 1
    assert str(problems[0]) == ("t.yml:4:5: tables[0].format: duplicate key 'format' "
                                "(first defined on line 3)")


def test_syntax_error_has_line_and_column():
    _, problems = parse("tables:\n  - name: [a\n  - name: b\n")
    assert len(problems) == 1
    loc = problems[0].location
    assert loc.file == "t.yml" and loc.line == 2  # where the unclosed '[' opens
    assert "invalid YAML" in problems[0].message


def test_tab_indentation_is_a_syntax_error_with_line():
    _, problems = parse("a: 1\nb:\n\t- x\n")
    assert problems and problems[0].location.line == 3


def test_anchors_and_merge_keys_work_and_overrides_are_not_duplicates():
    text = "base: &b {format: csv, tags: [x]}\nt:\n  <<: *b\n  format: parquet\n"
    doc, problems = parse(text)
    assert problems == []
    assert doc.data["t"] == {"format": "parquet", "tags": ["x"]}
    assert doc.location(("t", "format"), at_key=True).line == 4


def test_scalars_resolve_like_yaml_but_dates_stay_text():
    doc, problems = parse("a: 1\nb: 2.5\nc: true\nd: null\ne: 2024-01-31\nf: '007'\ng: ~\n")
    assert problems == []
    assert doc.data == {"a": 1, "b": 2.5, "c": True, "d": None, "e": "2024-01-31", "f": "007",
                        "g": None}


def test_custom_tags_are_rejected_with_location():
    _, problems = parse("a: !!python/name:os.system x\n")
    assert len(problems) == 1
    assert "unsupported YAML tag" in problems[0].message
    assert problems[0].location.line == 1


def test_recursive_alias_is_an_error_not_a_hang():
    _, problems = parse("a: &x [1, *x]\n")
    assert problems and "recursive" in problems[0].message


def test_template_strings_are_recorded_by_path():
    doc, _ = parse("a: '{{ var(\"x\") }}'\nb: [plain, 'x {% if 1 %}y{% endif %}']\nc: '{not a template}'\n")
    assert doc.templates == [("a",), ("b", 1)]


def test_empty_file_is_none(tmp_path: Path):
    path = tmp_path / "empty.yml"
    path.write_text("# only a comment\n")
    problems = []
    doc = load_document(path, problems, name="empty.yml")
    assert doc.data is None and problems == []


def test_non_utf8_file_is_a_located_problem(tmp_path: Path):
    path = tmp_path / "latin.yml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    problems = []
    load_document(path, problems, name="latin.yml")
    assert len(problems) == 1 and "not UTF-8" in problems[0].message
    assert problems[0].location.file == "latin.yml"


def test_format_key_path():
    assert format_key_path(("tables", 0, "columns", 2, "name")) == "tables[0].columns[2].name"
    assert format_key_path(()) == ""


# --- property: same data as yaml.safe_load, and every key is located on its own line ---------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
import yaml  # noqa: E402

_keys = st.text(alphabet="abcxyz_", min_size=1, max_size=6)
_leaves = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000),
                    st.text(alphabet="ab :-#'\"{}", max_size=8))
_values = st.recursive(_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)), max_leaves=12)


def _key_paths(value, prefix=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield prefix + (key,)
            yield from _key_paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _key_paths(item, prefix + (index,))


@settings(max_examples=100, deadline=None)
@given(data=st.dictionaries(_keys, _values, min_size=1, max_size=4),
       flow=st.sampled_from([False, None]))
def test_loader_matches_safe_load_and_locates_every_key(data, flow):
    text = yaml.safe_dump(data, default_flow_style=flow, sort_keys=False)
    doc, problems = parse(text)
    assert problems == []
    assert doc.data == yaml.safe_load(text)
    lines = text.splitlines()
    for path in _key_paths(data):
        loc = doc.location(path, at_key=True)
        assert loc.key_path is not None
        line = lines[loc.line - 1]
        key = path[-1]
        assert line[loc.col - 1:].lstrip("'\"").startswith(key), (path, loc, line)


def test_an_aliased_mapping_with_a_merge_is_not_a_duplicate_the_second_time():
    doc, problems = parse("base: &b {a: 1, c: 3}\nt: &t\n  <<: *b\n  a: 2\nu: *t\n")
    assert problems == []
    assert doc.data["t"] == doc.data["u"] == {"a": 2, "c": 3}


def test_unclosed_bracket_or_quote_is_reported_where_it_opens():
    _, problems = parse("tables:\n  - name: a\n    key_columns: [id\n  - name: b\n")
    assert (problems[0].location.line, problems[0].location.col) == (3, 18)
    assert "noticed at line 4" in problems[0].message
    _, problems = parse("tables:\n  - name: 'a\n  - name: b\n")
    assert problems[0].location.line == 2


def test_bad_indentation_is_reported_on_its_line():
    _, problems = parse("tables:\n  - name: a\n   key_columns: [id]\n")
    assert problems[0].location.line == 3
    _, problems = parse("tables:\n  - name: a: b\n")
    assert problems[0].location.line == 2
