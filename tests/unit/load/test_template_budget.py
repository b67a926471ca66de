"""Template budgets hold through every filter, global and method: sizes are refused before the
value is built (peak memory stays small), time is enforced inside a long pure-Python filter."""

from __future__ import annotations

import time
import tracemalloc

import jinja2.defaults
import pytest

from mirrorspec.load import budget
from mirrorspec.load.render import Renderer, TemplateTooCostly
from mirrorspec.load.yaml_doc import parse_document

BIG = 1_000_000


def costly(template: str) -> tuple[str, int]:
    """The refusal and the peak bytes Python allocated while rendering `template`."""
    renderer = Renderer({}, {})
    tracemalloc.start()
    try:
        with pytest.raises((TemplateTooCostly, Exception)) as caught:
            renderer.render(template)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return str(caught.value), peak


# Each bypass found by the second adversarial run, then the same trick through
# other filters, globals, methods and operators.
@pytest.mark.parametrize("template", [
    "{{ lipsum(2000000) }}",
    "{{ ('a' * 900000) | wordwrap(1) }}",
    "{{ 'a' | center(400000000) }}",
    "{{ 'a'.center(400000000) }}",
    "{{ 'x'.ljust(10 ** 9) }}",
    "{{ 'a\tb'.expandtabs(1000000000) }}",
    "{{ '%400000000s' % 'a' }}",
    "{{ '%*s' % (400000000, 'a') }}",
    "{{ '%400000000s' | format('a') }}",
    "{{ '{:>400000000}'.format('a') }}",
    "{{ '{:>{}}'.format('a', 400000000) }}",
    "{% set s = 'a' * 1000000 %}{{ [s] * 1000 }}",
    "{% set s = 'a' * 1000000 %}{{ s ~ s }}",
    "{% set s = 'a' * 900000 %}{{ s.replace('a', 'bb') }}",
    "{% set s = 'a' * 900000 %}{{ s | replace('a', 'bbbb') }}",
    "{{ [1] | batch(400000000, 0) | list }}",
    "{{ [1] | slice(400000000) | list }}",
    "{{ range(10) | map('center', 400000000) | list }}",
    "{{ ([[0] * 1000] * 1000) | sum(start=[]) | length }}",
    "{% set l = [1] %}{% for i in range(40) %}{{ l.extend(l) or '' }}{% endfor %}",
    "{% set s = 'a' * 500000 %}{% set t %}{% for i in range(1000) %}{{ s }}{% endfor %}"
    "{% endset %}{{ t | length }}",
    "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% else %}{{ 'a' * 100000 }}"
    "{% endif %}{% endmacro %}{{ f(30) }}",
])
def test_a_costly_value_is_refused_before_it_is_built(template):
    message, peak = costly(template)
    assert "longer than 1,000,000" in message, message
    assert peak < 40 * BIG, f"{peak:,} bytes allocated before the refusal"


def test_methods_outside_the_list_are_not_callable():
    message, _ = costly("{{ (1).to_bytes(1000000000, 'big') }}")
    assert "int.to_bytes() is not available" in message
    message, _ = costly("{{ dict.fromkeys(range(10)) }}")
    assert "fromkeys() is not available" in message


def test_a_slow_filter_is_stopped_at_the_deadline(monkeypatch):
    monkeypatch.setattr(budget, "MAX_SECONDS", 0.3)
    started = time.monotonic()
    with pytest.raises(TemplateTooCostly, match="rendering took more than 0.3 s"):
        # 800,000 characters out: under the size bound, quadratic in textwrap's long-word path
        Renderer({}, {}).render("{{ ('a' * 400000) | wordwrap(1) | length }}")
    assert time.monotonic() - started < 5  # stopped inside the filter, not after it


def test_every_jinja_filter_has_a_size_bound():
    assert set(jinja2.defaults.DEFAULT_FILTERS) == set(budget.FILTERS)
    env = Renderer({}, {}).env
    assert set(jinja2.defaults.DEFAULT_FILTERS) <= set(env.filters)


@pytest.mark.parametrize("template,expected", [
    ("{{ 'ab' | center(6) }}", "  ab  "),
    ("{{ '%5s|%-3d' | format('a', 2) }}", "    a|2  "),
    ("{{ '%s-%s' % ('a', 'b') }}", "a-b"),
    ("{{ '{:>4}'.format('a') }}", "   a"),
    ("{{ [1, 2, 3] | join(',') }}", "1,2,3"),
    ("{{ 'a,b'.split(',') | join('+') }}", "a+b"),
    ("{{ 'hello world' | wordwrap(5) }}", "hello\nworld"),
    ("{{ 'a' ~ 1 ~ 'b' }}", "a1b"),
    ("{{ lipsum(2, html=false) | wordcount > 10 }}", True),
    ("{{ range(3) | map('string') | join }}", "012"),
    ("{% set l = [] %}{% for i in range(3) %}{{ l.append(i) or '' }}{% endfor %}{{ l }}",
     "[0, 1, 2]"),
])
def test_ordinary_templates_still_render(template, expected):
    assert Renderer({}, {}).render(template) == expected


def test_the_refusal_is_located_in_the_file():
    problems: list = []
    doc = parse_document('d: "{{ lipsum(2000000) }}"\n', "t.yml", None, problems)
    Renderer({}, {}).render_document(doc, problems)
    assert [str(p) for p in problems] and "template does too much work" in str(problems[0])
    assert "t.yml:1:" in str(problems[0])
