"""YAML files → plain Python data that remembers the line and column of every key and item.

The C parser/composer (`yaml.compose` with `CSafeLoader`) builds the node tree; one small walk
turns it into dicts/lists/scalars. The tree is kept, so any key path can be located when a problem
needs it. Duplicate keys, custom tags and syntax errors become located problems instead of silent
overwrites.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from mirrorspec.base.errors import Location, MirrorspecError

_Loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader]
try:  # the C loader is ~10x faster; fall back to pure Python where libyaml is missing
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader


_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_SCALAR_BUILDERS = {
    "tag:yaml.org,2002:int": "construct_yaml_int",
    "tag:yaml.org,2002:float": "construct_yaml_float",
    "tag:yaml.org,2002:bool": "construct_yaml_bool",
}
# Resolved YAML types we keep as their source text (dates are plain strings to mirrorspec).
_TEXT_TAGS = {_STR, "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}
_TEMPLATE_MARKERS = ("{{", "{%", "{#")
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
# Bounds on one document: nesting depth and alias expansion ("billion laughs"), both checked
# while building. libyaml's composer recurses in C (30,000 nested `[` crash the process), so a
# text that could nest past _COMPOSER_SAFE levels is first checked from the parser's flat event
# stream; ordinary files skip that scan (it costs as much as composing).
MAX_DEPTH = 100
MAX_ALIAS_NODES = 10_000
_COMPOSER_SAFE = 1000
# deep indentation, `- - -`, `? ? ?` (anchored at line starts: linear in the text)
_DEEP_RUN = re.compile(r"^[ \t?-]{%d}" % _COMPOSER_SAFE, re.M)


@dataclass
class Document:
    """One loaded YAML file: its data, and the composed node tree that locates any key path.

    Positions are looked up on demand (only problems need them), which keeps loading close to
    the speed of plain `yaml.load`. `templates` lists the paths of string values holding Jinja.
    """

    file: str  # the name shown in messages
    path: Path
    data: Any
    root: Any = None  # the yaml node tree
    templates: list[tuple[Any, ...]] = field(default_factory=list[Any])

    def location(self, path: tuple[Any, ...], at_key: bool = False) -> Location:
        """Where `path` is (its value, or its key with `at_key`); falls back to the nearest parent."""
        found, key_node, value_node = _find(self.root, tuple(path))
        shown = format_key_path(path) or None
        if value_node is None:
            return Location(self.file, 1, 1, shown, tuple(path))
        if len(found) < len(path):
            at_key = True
        node = key_node if at_key and key_node is not None else value_node
        return Location(self.file, node.start_mark.line + 1, node.start_mark.column + 1, shown,
                        tuple(path))

    def problem(self, path: tuple[Any, ...], message: str, at_key: bool = False,
                hint: str | None = None) -> MirrorspecError:
        """A located problem about `path`."""
        return MirrorspecError(message, self.location(path, at_key), hint)


def _find(root: Any, path: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any, Any]:
    """Walk `path` down the node tree: (the prefix found, its key node, its value node)."""
    node, key_node = root, root
    found: tuple[Any, ...] = ()
    for part in path:
        if isinstance(node, MappingNode):
            match = None
            for k, v in node.value:  # the last match: a merged or duplicated key's final value
                if isinstance(k, ScalarNode) and _key_text(k) == part:
                    match = (k, v)
            if match is None:
                break
            key_node, node = match
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            key_node = node = node.value[part]
        else:
            break
        found += (part,)
    return found, key_node, node


def _key_text(node: ScalarNode) -> Any:
    if node.tag == _STR:
        return node.value
    return _scalar(node)


def _scalar(node: ScalarNode) -> Any:
    """A bool/int/float scalar's value under YAML 1.2's core schema: PyYAML resolves with
    YAML 1.1, where yes/no/on/off are booleans and 1:30 or 1_000 are integers; 1.2 (and every
    other modern reader) keeps those as strings, so a typed value gets a typed error instead
    of silently becoming true."""
    tag = node.tag
    if tag == _BOOL and node.value.lower() not in ("true", "false"):
        return node.value
    if tag == _INT and ("_" in node.value or ":" in node.value):
        return node.value
    builder = _SCALAR_BUILDERS.get(tag)
    return getattr(_CONSTRUCTOR, builder)(node) if builder else node.value


def format_key_path(path: tuple[Any, ...]) -> str:
    """('tables', 0, 'key_columns') → 'tables[0].key_columns'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def display_name(path: Path) -> str:
    """The path as a user would type it: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if rel.startswith("..") else rel


def load_document(path: Path, problems: list[MirrorspecError], name: str | None = None) -> Document:
    """Read and parse one YAML file; syntax errors and duplicate keys go to `problems`."""
    shown = name or display_name(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problems.append(MirrorspecError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                                        Location(shown)))
        return Document(shown, path, None)
    except OSError as exc:
        problems.append(MirrorspecError(f"cannot read the file: {exc.strerror}", Location(shown)))
        return Document(shown, path, None)
    return parse_document(text, shown, path, problems)


def parse_document(text: str, file: str, path: Path | None, problems: list[MirrorspecError]) -> Document:
    """Parse YAML `text` (one document) into a Document."""
    doc = Document(file, path or Path(file), None)
    try:
        bound = _check_bounds(text, file)
        if bound is not None:
            problems.append(bound)
            return doc
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        problems.append(_syntax_problem(exc, file, text))
        return doc
    except yaml.YAMLError as exc:
        problems.append(MirrorspecError(f"invalid YAML: {exc}", Location(file)))
        return doc
    if node is None:
        return doc
    doc.root = node
    builder = _Builder(doc, problems)
    try:
        doc.data = builder.build(node, ())
    except _OverBound as exc:
        problems.append(exc.problem)
        doc.root = None
    return doc


def _check_bounds(text: str, file: str) -> MirrorspecError | None:
    """A located problem when `text` could nest deep enough to crash the composer and nests
    deeper than MAX_DEPTH; found from the parser's event stream (flat, no recursion)."""
    if text.count("[") + text.count("{") <= _COMPOSER_SAFE and not _DEEP_RUN.search(text):
        return None
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                return _bound_problem(event.start_mark, file, _TOO_DEEP, _TOO_DEEP_HINT)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


_TOO_DEEP = f"YAML nested deeper than {MAX_DEPTH} levels"
_TOO_DEEP_HINT = "flatten the structure; mirrorspec files need a few levels"
_TOO_MANY = f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} values"
_TOO_MANY_HINT = "write the values out or use fewer nested aliases"


class _OverBound(Exception):
    """The builder went over MAX_DEPTH or MAX_ALIAS_NODES; carries the located problem."""

    def __init__(self, problem: MirrorspecError):
        super().__init__(problem.message)
        self.problem = problem


def _bound_problem(mark: Any, file: str, message: str, hint: str) -> MirrorspecError:
    return MirrorspecError(message, Location(file, mark.line + 1, mark.column + 1), hint)


def _syntax_problem(exc: yaml.MarkedYAMLError, file: str, text: str = "") -> MirrorspecError:
    """A located YAML syntax error with the line, a caret under the spot and a hint. An
    unclosed `[`, `{` or quote is reported where it opens (the parser only notices at the end);
    anything else where the parser stopped."""
    mark = exc.problem_mark or exc.context_mark
    if "maximum nesting depth" in (exc.problem or "") and mark is not None:
        # libyaml's own nesting limit (PyYAML 6.0.4's wheels): its scanner, reading ahead, can
        # reach it before the event check in _check_bounds sees the 101st level
        return _bound_problem(mark, file, _TOO_DEEP, _TOO_DEEP_HINT)
    message = "invalid YAML: " + " ".join(part for part in (exc.context, exc.problem) if part)
    context = exc.context or ""
    if exc.context_mark is not None and exc.problem_mark is not None and (
            exc.context_mark.line != exc.problem_mark.line) and (
            context.startswith("while parsing a flow") or "quoted scalar" in context):
        mark = exc.context_mark
        message += (f" (noticed at line {exc.problem_mark.line + 1}, "
                    f"column {exc.problem_mark.column + 1})")
    if context == "while scanning a simple key" and exc.context_mark is not None:
        mark = exc.context_mark  # the key without its `:` is where the text starts
    line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
    lines = text.splitlines()
    source = lines[line - 1] if line and line <= len(lines) else None
    if source is not None and line:
        message += "\n" + caret_excerpt(source, line, col)
    return MirrorspecError(message, Location(file, line, col), _syntax_hint(exc, source))


def caret_excerpt(source: str, line: int, col: int | None) -> str:
    """'   7 | key: a: b' and a caret line under column `col` (1-based)."""
    gutter = f"{line:>5} | "
    shown = source.replace("\t", " ")
    caret = " " * (len(gutter) - 2) + "| " + " " * max((col or 1) - 1, 0) + "^"
    return gutter + shown + "\n" + caret


def _syntax_hint(exc: yaml.MarkedYAMLError, source: str | None) -> str | None:
    """What usually causes this parser complaint, in the user's terms."""
    problem = exc.problem or ""
    text = (source or "").strip()
    if "found character '\\t'" in problem or "\t" in (source or "")[:len(source or "") - len(
            (source or "").lstrip())]:
        return "indent with spaces; YAML does not allow tabs for indentation"
    if "mapping values are not allowed" in problem:
        if text.count(": ") + text.endswith(":") > 1:
            return ('a value containing ": " must be quoted, e.g. description: "note: text"')
        return "check the indentation of this line against the key above it"
    if "could not find expected ':'" in problem:
        return ("a key needs `: ` after it; a list item needs `- ` before it "
                "(or quote the text if it is a value continued on a new line)")
    if "did not find expected '-' indicator" in problem:
        return ("check the indentation: this line is not in line with the keys above it, "
                "and a new list item starts with `- `")
    if "did not find expected key" in problem or "expected <block end>" in problem:
        if text.startswith("- "):
            return ("a list item where keys were expected: either this `- ` line is indented "
                    "wrongly, or the items above it lack their `- `")
        return ("check the indentation: keys of one mapping line up, and a list item under "
                "a key starts with `- `")
    if "found undefined alias" in problem:
        return "`*name` refers to an anchor `&name` defined earlier in the same file"
    if "while scanning a quoted scalar" in (exc.context or ""):
        return "close the quote; inside double quotes write \\\" for a quote character"
    if "while parsing a flow" in (exc.context or ""):
        return "close the `[` or `{` opened here"
    return None


class _Builder:
    """Turns a composed node tree into Python data (duplicate keys: reported, the last one wins)."""

    def __init__(self, doc: Document, problems: list[MirrorspecError]):
        self.doc = doc
        self.problems = problems
        self.active: set[int] = set()
        self.built: set[int] = set()  # collection nodes built once (a second time: an alias)
        self.expanded = 0  # values built again through aliases
        self.merged: dict[int, int] = {}  # id(mapping node) → how many leading entries came from `<<`

    def build(self, node: Any, path: tuple[Any, ...]) -> Any:
        if isinstance(node, ScalarNode):
            tag = node.tag
            if tag in _TEXT_TAGS:
                value = node.value
                if "{" in value and any(m in value for m in _TEMPLATE_MARKERS):
                    self.doc.templates.append(path)
                return value
            if tag == _NULL:
                return None
            if tag in _SCALAR_BUILDERS:
                return _scalar(node)
            self._unsupported(node, path)
            return node.value
        if id(node) in self.active:
            self.problems.append(self.doc.problem(path, "a recursive YAML alias is not supported"))
            return None
        if len(path) >= MAX_DEPTH:
            raise _OverBound(_bound_problem(node.start_mark, self.doc.file, _TOO_DEEP,
                                            _TOO_DEEP_HINT))
        if id(node) in self.built:  # an alias: its values are built again
            self.expanded += len(node.value)
            if self.expanded > MAX_ALIAS_NODES:
                raise _OverBound(_bound_problem(node.start_mark, self.doc.file, _TOO_MANY,
                                                _TOO_MANY_HINT))
        else:
            self.built.add(id(node))
        self.active.add(id(node))
        try:
            if isinstance(node, MappingNode):
                if node.tag != "tag:yaml.org,2002:map":
                    self._unsupported(node, path)
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                if node.tag != "tag:yaml.org,2002:seq":
                    self._unsupported(node, path)
                return self._sequence(node, path)
        finally:
            self.active.discard(id(node))
        return None  # pragma: no cover - the composer only makes the three node kinds

    def _unsupported(self, node: Any, path: tuple[Any, ...]) -> None:
        self.problems.append(MirrorspecError(
            f"unsupported YAML tag {node.tag}",
            Location(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1,
                     format_key_path(path) or None)))

    def _sequence(self, node: SequenceNode, path: tuple[Any, ...]) -> list[Any]:
        build = self.build
        return [build(child, path + (index,)) for index, child in enumerate(node.value)]

    def _mapping(self, node: MappingNode, path: tuple[Any, ...]) -> dict[str, Any]:
        merged = self.merged.get(id(node), 0)  # an aliased mapping is flattened only once
        if any(key.tag == _MERGE for key, _ in node.value):
            own = sum(1 for key, _ in node.value if key.tag != _MERGE)
            try:
                _CONSTRUCTOR.flatten_mapping(node)
            except yaml.constructor.ConstructorError as exc:
                mark = exc.problem_mark
                self.problems.append(MirrorspecError(
                    f"invalid YAML merge: {exc.problem}",
                    Location(self.doc.file, mark.line + 1 if mark else None,
                             mark.column + 1 if mark else None)))
                return {}
            merged = self.merged[id(node)] = len(node.value) - own
        result: dict[str, Any] = {}
        first_line: dict[str, Any] = {}
        for index, (key_node, value_node) in enumerate(node.value):
            if not isinstance(key_node, ScalarNode):
                self.problems.append(MirrorspecError(
                    "a key must be a plain value, not a list or mapping",
                    Location(self.doc.file, key_node.start_mark.line + 1,
                             key_node.start_mark.column + 1, format_key_path(path) or None)))
                continue
            key = key_node.value if key_node.tag == _STR else self.build(key_node, path)
            try:
                hash(key)
            except TypeError:  # pragma: no cover - scalars are hashable
                continue
            if index >= merged:
                if key in first_line:
                    kmark = key_node.start_mark
                    self.problems.append(MirrorspecError(
                        f"duplicate key '{key}' (first defined on line {first_line[key]})",
                        Location(self.doc.file, kmark.line + 1, kmark.column + 1,
                                 format_key_path(path + (key,)))))
                first_line[key] = key_node.start_mark.line + 1
            result[key] = self.build(value_node, path + (key,))
        return result
