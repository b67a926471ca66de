"""The work one template may do, checked before a value is built.

A project file must not be able to hang or exhaust compile (security.md): one template may
iterate MAX_ITERATIONS times, build no value whose text is longer than MAX_TEXT characters, and
run MAX_SECONDS. Sizes are predicted from the arguments of every filter, global and method
call (`center(10**9)`, `lipsum(10**6)`, `'%*s' % (10**9, 'a')` are refused before they
allocate); time is checked around every call and, inside one, by a trace function, so a
pure-Python filter that takes quadratic time (`wordwrap(1)` on a long word) is stopped at the
deadline. Methods of builtin values are allowed only when listed in METHODS.
"""

from __future__ import annotations

import re
import string
import sys
import time
from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any, Callable

MAX_ITERATIONS = 100_000  # loop items and range() items, all loops of one template together
MAX_TEXT = 1_000_000  # characters (or items) of any one value built and of the output
MAX_SECONDS = 5.0
_DEPTH = 50  # nesting a value may have when it is sized (template values are shallow)


class TemplateTooCostly(Exception):
    """A template went over one of the bounds above."""


def too_long() -> TemplateTooCostly:
    return TemplateTooCostly(f"a value longer than {MAX_TEXT:,} characters or items")


def text_size(value: Any, limit: int = MAX_TEXT, _depth: int = 0) -> int:
    """An upper bound of the length of `str(value)` (items count too); stops past `limit`."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (bool, type(None), float, complex)):
        return 40
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    if isinstance(value, (bytes, bytearray)):
        return 4 * len(value) + 3
    if isinstance(value, range):
        return 40  # lazy: its items are counted where a loop or filter draws them
    if _depth > _DEPTH:
        return limit + 1
    if isinstance(value, Mapping):
        items: Any = ((k, v) for k, v in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = ((item,) for item in value)
    else:
        return 100  # an iterator, a Jinja object (loop, cycler, macro): its repr is short
    total = 2
    for parts in items:
        for part in parts:
            size = len(part) if isinstance(part, str) else text_size(part, limit, _depth + 1)
            if isinstance(part, str) and ("\\" in part or not part.isprintable()):
                size *= 10  # repr() escapes it inside a container
            total += size + 4
        if total > limit:
            return limit + 1
    return total


def check_size(value: Any) -> Any:
    """`value` itself, unless its text would be longer than MAX_TEXT."""
    if text_size(value) > MAX_TEXT:
        raise too_long()
    return value


def _int(value: Any) -> int:
    return abs(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def _args_of(values: Any) -> list[Any]:
    if isinstance(values, Mapping):
        return list(values.values())
    if isinstance(values, tuple):
        return list(values)
    return [values]


# --- output-size estimators: (value, *args, **kwargs) -> an upper bound of the result's size ---

_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([a-zA-Z%])")


def percent_size(fmt: str, values: Any) -> int:
    """Bound of `fmt % values`: every conversion may take the longest value, widths and
    precisions (`*` ones from the values) add their number."""
    args = _args_of(values)
    largest = max((text_size(a) for a in args), default=0)
    widest = max((_int(a) for a in args), default=0)
    total = len(fmt)
    for match in _PERCENT.finditer(fmt):
        total += largest * (10 if match.group(3) in "ra" else 1)
        for number in match.group(1, 2):
            if number:
                total += widest if number == "*" else int(number)
    return total


def format_size(fmt: str, *args: Any, **kwargs: Any) -> int:
    """Bound of `fmt.format(*args, **kwargs)` (nested `{}` in a spec: the largest number)."""
    values = [*args, *kwargs.values()]
    for value in list(values):
        if isinstance(value, Mapping):  # format_map
            values.extend(value.values())
    largest = max((text_size(v) for v in values), default=0)
    widest = max((_int(v) for v in values), default=0)
    total = 0
    for literal, field, spec, conversion in string.Formatter().parse(fmt):
        total += len(literal)
        if field is None:
            continue
        total += largest * (10 if conversion in ("r", "a") else 1)
        total += sum(int(n) for n in re.findall(r"\d+", spec or ""))
        if spec and "{" in spec:
            total += widest
    return total


def _replace(value: Any, old: Any = "", new: Any = "", count: Any = -1) -> int:
    text, old, new = str(value), str(old), str(new)
    hits = len(text) + 1 if not old else text.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(len(new) - len(old), 0)


def _join(value: Any, d: Any = "", attribute: Any = None) -> int:
    items = list(value) if not isinstance(value, str) else list(value)
    return sum(text_size(i) for i in items) + max(len(items) - 1, 0) * text_size(d)


def _indent(value: Any, width: Any = 4, first: Any = False, blank: Any = False) -> int:
    pad = len(width) if isinstance(width, str) else _int(width)
    text = str(value)
    return len(text) + (text.count("\n") + 1) * pad


def _wordwrap(value: Any, width: Any = 79, break_long_words: Any = True,
              wrapstring: Any = None, break_on_hyphens: Any = True) -> int:
    text = str(value)
    lines = len(text) // max(_int(width), 1) + text.count("\n") + 1
    return len(text) + lines * max(len(wrapstring or "\n"), 1)


def _sum(value: Any, attribute: Any = None, start: Any = 0) -> int:
    items = list(value)
    total = text_size(start) + sum(text_size(i) for i in items)
    if not isinstance(start, (int, float)):  # sequences: every step copies what is summed
        if total * max(len(items), 1) > 20 * MAX_TEXT:
            return MAX_TEXT + 1
    return total


def lipsum_size(n: Any = 5, html: Any = True, min: Any = 20, max: Any = 100) -> int:
    """Bound of `lipsum(n, html, min, max)`: n paragraphs of up to `max` words of ≤ 14 letters."""
    return _int(n) * (_int(max) * 15 + 20)


def _scaled(factor: int) -> Callable[..., int]:
    def size(value: Any, *args: Any, **kwargs: Any) -> int:
        return factor * (text_size(value) + sum(text_size(a) for a in [*args, *kwargs.values()]))
    return size


_SAME = _scaled(1)
# Every filter Jinja defines, with the bound of its result; a filter missing here is refused
# (test_render checks the table covers Jinja's filters, so a Jinja upgrade can't add one silently).
FILTERS: dict[str, Callable[..., int]] = {
    **{name: _SAME for name in (
        "abs", "attr", "count", "d", "default", "dictsort", "first", "float", "groupby", "int",
        "items", "last", "length", "list", "map", "max", "min", "random", "reject",
        "rejectattr", "reverse", "round", "safe", "select", "selectattr", "sort", "string",
        "striptags", "trim", "truncate", "unique", "wordcount", "filesizeformat", "xmlattr")},
    **{name: _scaled(3) for name in ("capitalize", "lower", "title", "upper")},
    **{name: _scaled(6) for name in ("e", "escape", "forceescape")},
    "pprint": _scaled(10), "tojson": _scaled(12), "urlencode": _scaled(12),
    "urlize": _scaled(64),
    "center": lambda value, width=80: max(len(str(value)), _int(width)),
    "format": lambda value, *args, **kwargs: percent_size(str(value), kwargs or args),
    "join": _join, "replace": _replace, "indent": _indent, "wordwrap": _wordwrap, "sum": _sum,
    "batch": lambda value, linecount, fill_with=None: text_size(value) + (
        _int(linecount) * text_size(fill_with) if fill_with is not None else 0),
    "slice": lambda value, slices, fill_with=None: text_size(value) + 4 * _int(slices) + (
        _int(slices) * text_size(fill_with) if fill_with is not None else 0),
}

_WIDTH = lambda text, width, fillchar=" ": max(len(text), _int(width))  # noqa: E731
# Methods of builtin values a template may call, with the bound of their result (the value is
# `__self__`). Growing a list or dict counts items; its text is checked where it is output.
METHODS: dict[tuple[type, str], Callable[..., int]] = {
    **{(str, name): _scaled(3) for name in (
        "capitalize", "casefold", "count", "endswith", "find", "index", "isalnum", "isalpha",
        "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
        "isprintable", "isspace", "istitle", "isupper", "lower", "lstrip", "partition",
        "removeprefix", "removesuffix", "rfind", "rindex", "rpartition", "rsplit", "rstrip",
        "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper")},
    **{(str, name): _WIDTH for name in ("center", "ljust", "rjust", "zfill")},
    (str, "expandtabs"): lambda text, tabsize=8: len(text) + text.count("\t") * _int(tabsize),
    (str, "replace"): _replace,
    (str, "join"): lambda text, items: _join(items, text),
    (str, "encode"): _scaled(4),
    (str, "format"): format_size,
    (str, "format_map"): format_size,
    **{(kind, name): _SAME for kind in (list, tuple) for name in ("count", "index")},
    **{(list, name): lambda items, *args: len(items) + 1 for name in ("append", "insert")},
    (list, "extend"): lambda items, more: len(items) + (
        len(more) if hasattr(more, "__len__") else text_size(more)),
    **{(list, name): _SAME for name in ("pop", "remove", "reverse", "sort", "clear", "copy")},
    **{(dict, name): _SAME for name in (
        "get", "items", "keys", "values", "pop", "popitem", "clear", "copy")},
    (dict, "update"): lambda items, *args, **kwargs: len(items) + text_size(args) + len(kwargs),
    (dict, "setdefault"): lambda items, *args: len(items) + 1,
}


class Budget:
    """One template's iteration count and deadline (`start()` before each template)."""

    def __init__(self) -> None:
        self.iterations = 0
        self.deadline = 0.0
        self._tracing = False
        self.start()

    def start(self) -> None:
        self.iterations = 0
        self.deadline = time.monotonic() + MAX_SECONDS

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateTooCostly(f"rendering took more than {MAX_SECONDS:g} s")

    def spend(self, count: int) -> None:
        self.iterations += count
        if self.iterations > MAX_ITERATIONS:
            raise TemplateTooCostly(f"more than {MAX_ITERATIONS:,} loop iterations")
        self.check_time()

    def _trace(self, frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > self.deadline:
            raise TemplateTooCostly(f"rendering took more than {MAX_SECONDS:g} s")
        return self._trace

    def run(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`function(*args, **kwargs)` under the deadline, its result sized."""
        self.check_time()
        if self._tracing:
            return check_size(function(*args, **kwargs))
        previous = sys.gettrace()
        self._tracing = True
        sys.settrace(self._trace)
        try:
            result = function(*args, **kwargs)
        finally:
            sys.settrace(previous)
            self._tracing = False
        self.check_time()
        return check_size(result)

    def materialize(self, value: Any) -> Any:
        """A list of an iterator's items (at most MAX_TEXT of them), so it can be sized."""
        if not isinstance(value, Iterator):
            return value
        items = self.run(lambda: list(islice(value, MAX_TEXT + 1)))
        if len(items) > MAX_TEXT:
            raise too_long()
        return items

    def guard(self, function: Callable[..., Any], size: Callable[..., int],
              skip: int = 0) -> Callable[..., Any]:
        """`function` refused when `size(...)` of its arguments (after the first `skip`, the
        context or environment Jinja passes) is over MAX_TEXT, else run under the deadline."""
        def guarded(*args: Any, **kwargs: Any) -> Any:
            passed, args = args[:skip], args[skip:]
            args = tuple(self.materialize(a) for a in args)
            if size(*args, **kwargs) > MAX_TEXT:  # bounded by text_size's limit: not traced
                raise too_long()
            return self.run(function, *passed, *args, **kwargs)
        guarded.__dict__.update(getattr(function, "__dict__", {}))  # jinja_pass_arg
        guarded.__name__ = getattr(function, "__name__", "filter")
        return guarded
