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
from typing import Any, Mapping

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from mirrorspec.compile.plan import SECRET_PREFIX, secret_placeholder
from mirrorspec.errors import MirrorspecError
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


class Renderer:
    """Renders template strings with one set of vars and one environment."""

    def __init__(self, variables: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None):
        self.variables = dict(variables or {})
        self.environ = os.environ if environ is None else environ
        self.env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False,
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
            return value
        template = self._templates.get(text)
        if template is None:
            template = self.env.from_string(text)
            self._templates[text] = template
        return template.render()

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
            if path:
                parent[key] = value
            else:
                doc.data = value
