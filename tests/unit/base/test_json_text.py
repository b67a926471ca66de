"""The one JSON printer (`base/json_text.dumps_json`, also `mirroring.dumps_json`) prints exactly
what `json.dumps(doc, indent=2, ensure_ascii=False)` prints, and a dataclass as its `asdict`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspec.base.json_text import dumps_json
from mirrorspec.openmirroring import mirroring

_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
            | st.text())
_DOCS = st.recursive(
    _SCALARS,
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner)
                   | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)),
    max_leaves=30)


def _json_module(doc) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


@settings(max_examples=300, deadline=None)
@given(_DOCS)
def test_the_printer_is_the_json_modules_byte_for_byte(doc):
    assert dumps_json(doc) == _json_module(doc)


def test_awkward_values_print_as_the_json_module_prints_them():
    doc = {"é": "line\nbreak \u2028 \"quoted\" \\ tab\t", 1: [], 2.5: {}, False: None,
           None: [1.0, -0.0, float("inf"), 10 ** 30], "nested": [[{"a": ()}]]}
    assert dumps_json(doc) == _json_module(doc)
    assert mirroring.dumps_json is dumps_json


@dataclass
class _Inner:
    name: str
    values: tuple[int, ...] = ()


@dataclass
class _Outer:
    inner: _Inner
    items: list[_Inner] = field(default_factory=list)
    by_name: dict[str, _Inner] = field(default_factory=dict)
    note: str | None = None


def test_a_dataclass_prints_as_its_asdict():
    value = _Outer(_Inner("a", (1, 2)), [_Inner("b")], {"c": _Inner("ç", (3,))})
    assert dumps_json(value) == _json_module(asdict(value))
