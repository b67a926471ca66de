"""Jinja2 on string values, after YAML parsing (so every value keeps its line and column).

Sandboxed, StrictUndefined. Functions: `var(name, default)` (project `vars:` overridden by
`--vars`) and `env_var(name, default)`. An `env_var()` whose name starts with
`MIRRORSPEC_SECRET_` renders to a placeholder that `mirrorspec run` resolves, so secrets never
land in `target/`. A value that is exactly one `{{ expression }}` keeps the expression's type
(`upsert_default: "{{ var('upsert', true) }}"` is a boolean).
"""

from __future__ import annotations

import os
import re
import types
from typing import Any, Iterable, Mapping

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum

from mirrorspec.artifacts.plan import SECRET_PREFIX, holds_secret, secret_placeholder
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.load.budget import (
    FILTERS, MAX_TEXT, METHODS, Budget, TemplateTooCostly, check_size, lipsum_size,
    percent_size, text_size, too_long)
from mirrorspec.load.secret_names import secret_reason
from mirrorspec.load.yaml_doc import Document

_MISSING = object()
# The common case, `{{ var('name') }}` / `{{ env_var('NAME', 'default') }}` inside text, is
# evaluated without compiling a Jinja template (compiling costs ~1 ms per distinct string).
_LITERAL = r"""(?:'[^'\\]*'|"[^"\\]*"|-?\d+(?:\.\d+)?|true|false|none|True|False|None)"""
_SIMPLE_CALL = re.compile(
    r"\{\{-?\s*(?P<fn>var|env_var)\s*\(\s*(?P<name>'[^'\\]*'|\"[^\"\\]*\")"
    r"\s*(?:,\s*(?P<default>" + _LITERAL + r")\s*)?\)\s*-?\}\}")
_KEYWORDS = {"true": True, "false": False, "none": None, "True": True, "False": False, "None": None}
_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\{\{|\}\}|\{%|\{#).)*)\}\}\s*$", re.S)


def _literal(text: str) -> Any:
    if text in _KEYWORDS:
        return _KEYWORDS[text]
    if text[0] in "'\"":
        return text[1:-1]
    return float(text) if "." in text else int(text)


class _RenderError(Exception):
    """A user mistake inside a template function (an undefined var, a secret with a default)."""


class _BoundedEnvironment(SandboxedEnvironment):
    """The sandbox plus a budget (`budget.py`): every filter, global and method call is sized
    before it runs and timed while it runs, every `{% for %}` iterable and `range()` draw from
    one iteration count, and `*` `**` `+` `%` `~` and every output are sized."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.budget = Budget()
        unknown = set(self.filters) - set(FILTERS)
        for name in unknown:  # a filter without a size bound is not offered
            del self.filters[name]
        for name, function in list(self.filters.items()):
            skip = 1 if getattr(function, "jinja_pass_arg", None) else 0
            self.filters[name] = self.budget.guard(function, FILTERS[name], skip)
        self.globals["range"] = self._range
        self.globals["lipsum"] = self.budget.guard(generate_lorem_ipsum, lipsum_size)
        self.filters["_mirrorspec_bounded"] = self._bounded
        self.filters["_mirrorspec_concat"] = self._concat_parts
        self.finalize = check_size
        self.concat = self._concat  # type: ignore[method-assign]  # every block, macro and output

    def start(self) -> None:
        """Reset the budget (before each template)."""
        self.budget.start()

    def _range(self, *args: int) -> range:
        values = range(*args)
        self.budget.spend(len(values))
        return values

    def _bounded(self, iterable: Iterable[Any]) -> Iterable[Any]:
        for item in iterable:
            self.budget.spend(1)
            yield item

    def _concat(self, pieces: Iterable[str]) -> str:
        size = 0
        kept = []
        for piece in pieces:
            size += len(piece)
            if size > MAX_TEXT:
                raise TemplateTooCostly(f"output longer than {MAX_TEXT:,} characters")
            kept.append(piece)
        return "".join(kept)

    def _concat_parts(self, parts: list[Any]) -> str:
        if sum(text_size(part) for part in parts) > MAX_TEXT:
            raise too_long()
        return "".join(str(part) for part in parts)

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        if operator_ == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
            if abs(left) > 1 and right * max(abs(left).bit_length(), 1) > 4 * MAX_TEXT:
                raise TemplateTooCostly("a number too large to compute")
        elif operator_ == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(count, int) and \
                        text_size(seq) * count > MAX_TEXT:
                    raise too_long()
        elif operator_ == "+" and isinstance(left, (str, list, tuple)):
            if text_size(left) + text_size(right) > MAX_TEXT:
                raise too_long()
        elif operator_ == "%" and isinstance(left, str):
            if percent_size(left, right) > MAX_TEXT:
                raise too_long()
        return check_size(self.binop_table[operator_](left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        bound = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped by the sandbox
        owner = getattr(bound, "__self__", None)
        if isinstance(bound, (types.BuiltinMethodType, types.MethodType)) and isinstance(
                owner, (type, str, bytes, int, float, complex, list, tuple, dict, set, frozenset)):
            kind = next((k for k in (str, list, dict, tuple) if isinstance(owner, k)), None)
            size = METHODS.get((kind, bound.__name__)) if kind else None
            if size is None:
                raise SecurityError(f"{type(owner).__name__}.{bound.__name__}() is not "
                                    "available in a mirrorspec template")
            named = {k: v for k, v in kwargs.items() if k not in ("_loop_vars", "_block_vars")}
            if size(owner, *args, **named) > MAX_TEXT:
                raise too_long()
        return __self.budget.run(super().call, __context, __obj, *args, **kwargs)

    def _generate(self, source: Any, name: Any, filename: Any, defer_init: bool = False) -> Any:
        for loop in source.find_all(nodes.For):  # every loop draws from the budget
            loop.iter = nodes.Filter(loop.iter, "_mirrorspec_bounded", [], [], None, None,
                                     lineno=loop.lineno)
        for concat in list(source.find_all(nodes.Concat)):  # `~` sized before it joins
            parts = nodes.List(concat.nodes, lineno=concat.lineno)
            concat.nodes = [nodes.Filter(parts, "_mirrorspec_concat", [], [], None, None,
                                         lineno=concat.lineno)]
        return super()._generate(source, name, filename, defer_init=defer_init)


def secret_allowed(path: tuple[Any, ...]) -> bool:
    """Where a secret placeholder may stay until run time: a project var (checked where it is
    used), a profile's `spark` settings, a table's `source.options` and `source.kafka.options`."""
    if path[:1] == ("vars",):
        return True
    if len(path) > 4 and path[1] == "outputs" and path[3] == "spark":
        return True
    if any(path[i:i + 3] == ("source", "kafka", "options") for i in range(len(path) - 2)):
        return True
    return any(path[i:i + 2] == ("source", "options") and path[i + 2:i + 3] != ("key_columns",)
               for i in range(len(path) - 1))


class Renderer:
    """Renders template strings with one set of vars and one environment."""

    def __init__(self, variables: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None,
                 not_secret: Iterable[str] = ()):
        self.variables = dict(variables or {})
        self.environ = os.environ if environ is None else environ
        self.not_secret = set(not_secret)  # the project's `env-vars-not-secret:`
        self.env = _BoundedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False,
                                       keep_trailing_newline=True)
        self.env.globals.update(var=self._var, env_var=self._env_var)
        self._templates: dict[str, Any] = {}
        self._expressions: dict[str, Any] = {}

    def _var(self, name: str, default: Any = _MISSING) -> Any:
        if name in self.variables:
            return self.variables[name]
        if default is _MISSING:
            raise _RenderError(
                f"var('{name}') is not defined; set it under `vars:` in mirrorspec_project.yml, "
                f"pass --vars '{{{name}: …}}', or give a default: var('{name}', …)")
        return default

    def _env_var(self, name: str, default: Any = _MISSING) -> Any:
        if str(name).startswith(SECRET_PREFIX):
            if default is not _MISSING:
                raise _RenderError(f"env_var('{name}') is a secret and can't have a default "
                                   "(it would be written to target/)")
            return secret_placeholder(name)
        if name not in self.not_secret:
            reason = secret_reason(str(name), self.environ.get(name))
            if reason:
                raise _RenderError(
                    f"env_var('{name}') looks like a secret ({reason}); its value would be "
                    f"written to target/ and the docs site. Export it as {SECRET_PREFIX}{name} "
                    f"and use env_var('{SECRET_PREFIX}{name}') (resolved only at run time, in "
                    "spark settings and source options), or, if it is not a secret, list it "
                    "under `env-vars-not-secret:` in mirrorspec_project.yml")
        if name in self.environ:
            return self.environ[name]
        if default is _MISSING:
            raise _RenderError(f"environment variable {name} is not set; export it or give a "
                               f"default: env_var('{name}', …)")
        return default

    def render(self, text: str) -> Any:
        """Render one string; raises _RenderError / jinja2 errors."""
        fast = self._render_simple(text)
        if fast is not _MISSING:
            return fast
        self.env.start()
        match = _SINGLE_EXPRESSION.match(text)
        if match:
            expression = self._expressions.get(text)
            if expression is None:
                expression = self.env.compile_expression(match.group("expr"),
                                                         undefined_to_none=False)
                self._expressions[text] = expression
            value = expression()
            if isinstance(value, jinja2.Undefined):
                value._fail_with_undefined_error()
            return check_size(value)
        template = self._templates.get(text)
        if template is None:
            template = self.env.from_string(text)
            self._templates[text] = template
        size = 0
        pieces = []
        for piece in template.generate():
            size += len(piece)
            if size > MAX_TEXT:
                raise TemplateTooCostly(f"output longer than {MAX_TEXT:,} characters")
            pieces.append(piece)
        return "".join(pieces)

    def _render_simple(self, text: str) -> Any:
        """`text` rendered without Jinja when it only calls var()/env_var() with literals;
        _MISSING when it needs the real engine."""
        pieces = []
        position = 0
        calls = 0
        for match in _SIMPLE_CALL.finditer(text):
            literal = text[position:match.start()]
            if "{" in literal or "}" in literal or "-}}" in match.group(0) or "{{-" in match.group(0):
                return _MISSING
            pieces.append(literal)
            function = self._var if match.group("fn") == "var" else self._env_var
            args = [match.group("name")[1:-1]]
            if match.group("default") is not None:
                args.append(_literal(match.group("default")))
            pieces.append(function(*args))
            position = match.end()
            calls += 1
        tail = text[position:]
        if calls == 0 or "{" in tail or "}" in tail:
            return _MISSING
        pieces.append(tail)
        if calls == 1 and len(pieces) == 3 and not pieces[0].strip() and not pieces[2].strip():
            return pieces[1]  # one expression: keep its type, like the Jinja path
        return "".join(p if isinstance(p, str) else str(p) for p in pieces)

    def render_document(self, doc: Document, problems: list[MirrorspecError],
                        skip: tuple[Any, ...] = (), only: tuple[Any, ...] | None = None) -> None:
        """Render every template string of `doc` in place; errors go to `problems`.

        `skip` / `only` hold key-path prefixes not to render / to render exclusively
        (the project file's `vars:` are rendered first, then the rest with them).
        """
        for path in doc.templates:
            if skip and any(path[: len(prefix)] == prefix for prefix in skip):
                continue
            if only is not None and not any(path[: len(prefix)] == prefix for prefix in only):
                continue
            parent = doc.data
            for part in path[:-1]:
                parent = parent[part]
            key = path[-1] if path else None
            text = parent[key] if path else doc.data
            try:
                value = self.render(text)
            except _RenderError as exc:
                problems.append(doc.problem(path, str(exc)))
                continue
            except TemplateTooCostly as exc:
                problems.append(doc.problem(
                    path, f"template does too much work: {exc}",
                    hint="a mirrorspec value needs a short expression; compute big values elsewhere"))
                continue
            except jinja2.TemplateSyntaxError as exc:
                problems.append(doc.problem(path, f"template syntax error: {exc.message}"))
                continue
            except jinja2.UndefinedError as exc:
                problems.append(doc.problem(
                    path, f"undefined in template: {exc.message}",
                    hint="use var('name') for project variables, env_var('NAME') for the environment"))
                continue
            except jinja2.exceptions.SecurityError as exc:
                problems.append(doc.problem(path, f"template not allowed: {exc}"))
                continue
            except Exception as exc:  # noqa: BLE001 - any template runtime error is the user's
                problems.append(doc.problem(path, f"template error: {type(exc).__name__}: {exc}"))
                continue
            if holds_secret(value) and not secret_allowed(path):
                problems.append(doc.problem(
                    path, f"a secret ({SECRET_PREFIX}*) can't be used here: it would be written "
                    "to target/ or name a folder",
                    hint="secrets belong in the profile's spark settings (master, remote, conf), "
                         "source.options or source.kafka.options; all are resolved only at "
                         "run time"))
                continue
            if path:
                parent[key] = value
            else:
                doc.data = value
