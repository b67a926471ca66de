"""Stage render: Jinja on string values after parsing; var(), env_var(), secrets, sandbox."""

from __future__ import annotations

import pytest

from mirrorspec.artifacts.plan import secret_placeholder
from mirrorspec.load.render import Renderer, _MISSING
from mirrorspec.load.yaml_doc import parse_document


def render_doc(text: str, variables=None, environ=None):
    problems = []
    doc = parse_document(text, "t.yml", None, problems)
    Renderer(variables or {}, environ or {}).render_document(doc, problems)
    return doc, problems


def test_var_and_env_var_inside_text():
    doc, problems = render_doc("d: \"{{ var('env') }} in {{ env_var('REGION') }}\"\n",
                               {"env": "prod"}, {"REGION": "eu"})
    assert problems == []
    assert doc.data == {"d": "prod in eu"}


def test_defaults_are_used_when_missing():
    doc, problems = render_doc("a: \"{{ var('x', 'dflt') }}\"\nb: \"{{ env_var('NOPE', 'e') }}\"\n")
    assert problems == [] and doc.data == {"a": "dflt", "b": "e"}


def test_single_expression_keeps_its_type():
    doc, problems = render_doc("a: \"{{ var('flag', true) }}\"\nb: \"{{ var('n') }}\"\n"
                               "c: \"{{ var('cols') }}\"\n", {"n": 3, "cols": ["x", "y"]})
    assert problems == []
    assert doc.data == {"a": True, "b": 3, "c": ["x", "y"]}


def test_undefined_var_is_an_error_at_the_value():
    doc, problems = render_doc("tables:\n  - name: \"{{ var('table_name') }}\"\n")
    assert len(problems) == 1
    text = str(problems[0])
    assert text.startswith("t.yml:2:11: tables[0].name: var('table_name') is not defined")
    assert "--vars" in text


def test_undefined_name_in_jinja_expression_is_an_error():
    _, problems = render_doc("a: \"{{ nothing | upper }}\"\n")
    assert len(problems) == 1 and "undefined" in problems[0].message
    assert problems[0].location.line == 1


def test_missing_environment_variable_is_an_error():
    _, problems = render_doc("a: \"{{ env_var('MISSING_VAR') }}\"\n")
    assert len(problems) == 1 and "MISSING_VAR is not set" in problems[0].message


def test_secret_env_var_becomes_a_placeholder_never_the_value():
    environ = {"MIRRORSPEC_SECRET_KEY": "s3cr3t"}
    doc, problems = render_doc("source:\n  options:\n"
                               "    a: \"{{ env_var('MIRRORSPEC_SECRET_KEY') }}\"\n"
                               "    b: \"key={{ env_var('MIRRORSPEC_SECRET_KEY') }};\"\n", {}, environ)
    assert problems == []
    options = doc.data["source"]["options"]
    assert options["a"] == secret_placeholder("MIRRORSPEC_SECRET_KEY")
    assert options["b"] == "key=" + secret_placeholder("MIRRORSPEC_SECRET_KEY") + ";"
    assert "s3cr3t" not in repr(doc.data)


def test_secret_with_a_default_is_refused():
    _, problems = render_doc("a: \"{{ env_var('MIRRORSPEC_SECRET_KEY', 'x') }}\"\n")
    assert len(problems) == 1 and "secret" in problems[0].message


def test_template_syntax_error_is_located():
    _, problems = render_doc("x: 1\na: \"{{ var('x' }}\"\n")
    assert len(problems) == 1
    assert problems[0].location.line == 2 and "syntax" in problems[0].message


def test_sandbox_blocks_unsafe_attribute_access():
    _, problems = render_doc("a: \"{{ ''.__class__.__mro__ }}\"\n")
    assert len(problems) == 1


def test_jinja_statements_and_filters_work():
    doc, problems = render_doc("a: \"{% if var('prod', false) %}p{% else %}d{% endif %}\"\n"
                               "b: \"{{ var('name') | upper }}\"\n", {"name": "x"})
    assert problems == [] and doc.data == {"a": "d", "b": "X"}


@pytest.mark.parametrize("text", [
    "{{ var('a') }}", " {{ var('a') }} ", "x{{ var('a') }}y{{ var('b') }}z",
    "{{ var('missing', 'd') }}", "{{ var(\"missing\", 5) }}", "{{ var('missing', 2.5) }}",
    "{{ var('missing', true) }}", "{{ var('missing', none) }} tail", "{{ env_var('E') }}",
    "{{ env_var('NOT_SET', 'fallback') }}", "{{ env_var('MIRRORSPEC_SECRET_T') }}",
    "{{ var('flag') }}", "pre {{ var('flag') }}",
])
def test_fast_path_equals_jinja(text):
    renderer = Renderer({"a": "A", "b": 2, "flag": False}, {"E": "e"})
    fast = renderer._render_simple(text)
    assert fast is not _MISSING
    # the same template through Jinja (bypassing the fast path)
    match_single = text.strip().startswith("{{") and text.strip().endswith("}}") and text.count("{{") == 1
    if match_single:
        slow = renderer.env.compile_expression(text.strip()[2:-2], undefined_to_none=False)()
    else:
        slow = renderer.env.from_string(text).render()
    assert fast == slow and type(fast) is type(slow)


def test_fast_path_declines_anything_else():
    renderer = Renderer({"a": "A"}, {})
    for text in ["{{ var('a') | upper }}", "{{ var('a') }} {% if 1 %}x{% endif %}", "{{ a }}",
                 "{# c #}{{ var('a') }}", "{{- var('a') }}"]:
        assert renderer._render_simple(text) is _MISSING
