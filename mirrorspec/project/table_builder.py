"""Each table of the table files built from schema-valid YAML over the project's `defaults:`,
and its cross-checks: names, columns and keys, source, delimited dialect, what the feed infers,
data tests. A table with schema errors is built from a copy without its invalid values, so one
pass reports everything; problems in inherited values point at `defaults:`."""

from __future__ import annotations

import codecs
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, cast

from mirrorspec.base.errors import Location, MirrorspecError
from mirrorspec.base.suggest import suggest
from mirrorspec.load.project import LoadedProject
from mirrorspec.load.validate import source_option_problems
from mirrorspec.load.yaml_doc import Document
from mirrorspec.openmirroring import mirroring
from mirrorspec.project.model import Column, Delimited, Source, Table, resolve_location
from mirrorspec.sources import LANDING_ZONE, resolve_options


DELIMITED_FORMATS = ("csv", "delimited_text")
# YAML key of `delimited:` → FileFormatTypeProperties name (the landing-zone specification)
DELIMITED_KEYS = {
    "first_row_as_header": "FirstRowAsHeader",
    "row_separator": "RowSeparator",
    "column_separator": "ColumnSeparator",
    "quote_character": "QuoteCharacter",
    "escape_character": "EscapeCharacter",
    "null_value": "NullValue",
    "encoding": "Encoding",
}
# Table keys that add up with `defaults:` instead of replacing them.
_ADDITIVE_KEYS = ("tags", "tests")
InferFn = Callable[[str, str | None, dict[str, Any]], Any]


def unsafe_name(what: str, name: str) -> str | None:
    """'column 'a/b' contains a path separator', or None for a safe name."""
    if name == mirroring.ROW_MARKER_COLUMN:
        return f"{what} '{name}' is reserved for the row marker"
    reason = mirroring.unsafe_name_reason(name, column="column" in what)
    return f"{what} '{name}' {reason}" if reason else None


class TableBuilder:
    """Builds the Table values of every table file, locating each problem."""

    def __init__(self, loaded: LoadedProject, problems: list[MirrorspecError], infer: InferFn):
        self.loaded = loaded
        self.problems = problems
        self.infer = infer
        self.project_doc = loaded.project

    def build_all(self, defaults: Mapping[str, Any]) -> list[Table]:
        entries = []  # (doc, key path of the table, raw mapping, pruned key paths)
        bad = self.loaded.bad_tables
        for doc in self.loaded.tables:
            if (doc.file, -1) in bad or not isinstance(doc.data, dict):
                continue
            for index, raw in enumerate(doc.data.get("tables") or []):
                if (doc.file, index) not in bad:
                    entries.append((doc, ("tables", index), raw, ()))
                    continue
                salvaged = _salvage(raw, self._bad_parts(doc.file, index))
                if salvaged is not None:
                    entries.append((doc, ("tables", index), salvaged[0], salvaged[1]))
        seen: dict[str, Location] = {}
        tables = []
        for doc, path, raw, pruned in entries:
            locate = _Locator(doc, path, raw, self.project_doc, defaults)
            if pruned:
                table = self._build_salvaged(raw, defaults, locate, pruned)
                if table is None:
                    continue
            else:
                table = self._build(raw, defaults, locate)
            key = table.unique_id.lower()
            if key in seen:
                self.problems.append(locate.problem(
                    "name", f"duplicate table {table.unique_id} (also defined at {seen[key]})",
                    at_key=True))
                continue
            seen[key] = locate.at("name", at_key=False)
            tables.append((table, locate))
        by_id = {t.unique_id.lower(): t for t, _ in tables}
        by_name: dict[str, list[Table]] = {}
        for t, _ in tables:
            by_name.setdefault(t.name.lower(), []).append(t)
        result = []
        for table, locate in tables:
            if locate.pruned:
                start = len(self.problems)
                try:
                    tests = self._tests(table, locate, by_id, by_name)
                except (KeyError, TypeError, AttributeError, ValueError, StopIteration):
                    tests = ()
                _drop_overlapping(self.problems, start, locate.pruned)
            else:
                tests = self._tests(table, locate, by_id, by_name)
            result.append(_replace(table, tests=tests))
        return result

    def _bad_parts(self, file: str, index: int) -> list[tuple[Any, ...]]:
        """Key paths (inside table `index` of `file`) of the schema problems found there."""
        out = []
        for problem in self.loaded.problems:
            loc = problem.location
            if loc is not None and loc.file == file and loc.parts[:2] == ("tables", index):
                out.append(loc.parts[2:])
        return out

    def _build_salvaged(self, raw: Mapping[str, Any], defaults: Mapping[str, Any],
                        locate: "_Locator", pruned: tuple[Any, ...]) -> Table | None:
        """Build a table whose invalid values were pruned, so its cross-checks run in the same
        pass as the schema errors; problems about the pruned places are left to the schema's."""
        locate.pruned = pruned
        start = len(self.problems)
        try:
            return self._build(raw, defaults, locate)
        except (KeyError, TypeError, AttributeError, ValueError):
            del self.problems[start:]
            return None
        finally:
            _drop_overlapping(self.problems, start, pruned)

    # one table ----------------------------------------------------------------------------
    def _build(self, raw: Mapping[str, Any], defaults: Mapping[str, Any],
               locate: "_Locator") -> Table:
        """The merged table; its problems go to self.problems."""
        merged = _merge_defaults(defaults, raw)
        problems = self.problems
        name = merged["name"]
        schema = merged.get("schema")
        for key, value, what in (("name", name, "table name"), ("schema", schema, "schema name")):
            if value is None:
                continue
            message = unsafe_name(what, value)
            if message is None and value.lower().endswith(mirroring.SCHEMA_FOLDER_SUFFIX):
                message = (f"{what} '{value}' ends with '{mirroring.SCHEMA_FOLDER_SUFFIX}' "
                           "(reserved for schema folders)")
            if message:
                problems.append(locate.problem(key, message))

        fmt = fmt_of(merged)
        columns = self._columns(merged.get("columns") or [], fmt, locate)
        keys = tuple(merged.get("key_columns") or ())
        if _source_split(defaults.get("source"), raw.get("source")):
            problems.extend(source_option_problems(merged["source"], _Within(locate, ("source",))))
        source = self._source(merged.get("source") or {}, locate)
        delimited = self._delimited(merged.get("delimited"), fmt, locate)
        inferred: tuple[str, ...] = ()
        if source.is_feed and source.path and (not keys or not columns):
            columns, keys, inferred = self._infer(source, columns, keys, locate)
        if source.kafka is not None and source.type != "qlik_replicate" and not columns:
            problems.append(locate.problem(
                ("source", "kafka"), f"a {source.type} table read from Kafka needs its columns "
                "in the YAML (compile doesn't read topics)", at_key=True,
                hint="declare columns (name and type); key_columns may come from the Kafka keys"))

        declared = [c.name for c in columns]
        seen_keys = set()
        for index, key in enumerate(keys):
            message = unsafe_name("key column", key)
            if message:
                problems.append(locate.problem(("key_columns", index), message))
            elif key in seen_keys:
                problems.append(locate.problem(("key_columns", index),
                                               f"key column '{key}' is listed twice"))
            elif columns and key not in declared:
                problems.append(locate.problem(
                    ("key_columns", index),
                    f"key column '{key}' is not a declared column" + suggest(key, declared)))
            seen_keys.add(key)
        upsert = merged.get("upsert_default")
        if upsert and not keys:
            problems.append(locate.problem(
                "upsert_default", "upsert_default needs key_columns: upserts replace rows by key",
                hint="declare key_columns or remove upsert_default"))
        table = Table(
            name=name,
            schema=schema,
            description=merged.get("description"),
            key_columns=keys,
            file_detection=merged.get("file_detection") or "sequential",
            upsert_default=upsert,
            format=fmt,
            delimited=delimited,
            columns=columns,
            source=source,
            tags=tuple(dict.fromkeys(merged.get("tags") or ())),
            deletion_vectors=merged.get("deletion_vectors"),
            settle_seconds=merged.get("settle_seconds"),
            change_data_feed=merged.get("change_data_feed"),
            recreate=bool(merged.get("recreate", False)),
            tests=tuple(merged.get("tests") or ()),  # raw until normalised in build_all
            yaml_file=_relative(locate.doc.path, self.loaded.project_dir),
            location=locate.at("name", at_key=True),
            key_location=locate.at("key_columns", at_key=True) if "key_columns" in merged
            else None,
            inferred=inferred,
        )
        return table

    def _columns(self, raw_columns: list[Any], fmt: str, locate: "_Locator") -> tuple[Column, ...]:
        columns = []
        seen: dict[str, str] = {}
        for index, raw in enumerate(raw_columns):
            name = raw["name"]
            message = unsafe_name("column", name)
            if message:
                self.problems.append(locate.problem(("columns", index, "name"), message))
                continue
            if fmt in DELIMITED_FORMATS and raw.get("type") is None:
                self.problems.append(locate.problem(
                    ("columns", index), f"column '{name}' needs a type: {fmt} tables declare "
                    "SchemaDefinition DataTypes", at_key=True))
            if name.lower() in seen:
                self.problems.append(locate.problem(
                    ("columns", index, "name"), f"duplicate column '{name}' "
                    f"(column names are compared case-insensitively: '{seen[name.lower()]}')"))
                continue
            seen[name.lower()] = name
            type_name = raw.get("type")
            canonical = None if type_name is None else mirroring.canonical_data_type(type_name)
            columns.append(Column(name, canonical, raw.get("nullable"), raw.get("description")))
        return tuple(columns)

    def _source(self, raw: Mapping[str, Any], locate: "_Locator") -> Source:
        source_type = raw.get("type") or LANDING_ZONE
        path = raw.get("path")
        kafka = raw.get("kafka")
        if kafka is not None:
            from mirrorspec.sources.kafka import config_problems

            for where, message, hint in config_problems(source_type, kafka):
                self.problems.append(locate.problem(("source", "kafka", *where), message,
                                                    hint=hint))
            avro = (raw.get("options") or {}).get("avro")
            encoding = avro.get("encoding", "json") if isinstance(avro, Mapping) else None
            if encoding not in (None, "confluent"):
                self.problems.append(locate.problem(
                    ("source", "options", "avro", "encoding"),
                    f"avro encoding {encoding} is for feed files; a Kafka topic is read in the "
                    "Confluent wire format",
                    hint="write encoding: confluent (what Confluent's AvroConverter puts on the "
                         "topic), or read the dumps as files with source.path"))
            return Source(source_type, None, dict(raw.get("options") or {}), dict(kafka))
        if source_type != LANDING_ZONE and not path:
            self.problems.append(locate.problem(
                "source", f"source type {source_type} needs a path (where the feed files are) "
                "or kafka (the topics)",
                hint="add source.path: a folder relative to the project, or a URI; or "
                     "source.kafka (docs/sources/kafka.md)"))
        if source_type == LANDING_ZONE and path:
            self.problems.append(locate.problem(
                ("source", "path"), "a landing_zone source has no path: another publisher writes "
                "the landing zone configured in profiles.yml",
                hint="set source.type to the feed format, or remove source.path"))
        return Source(source_type, path, dict(raw.get("options") or {}))

    def _delimited(self, raw: Mapping[str, Any] | None, fmt: str, locate: "_Locator") -> Delimited | None:
        if raw is None:
            if fmt == "delimited_text":
                self.problems.append(locate.problem(
                    "format", "a delimited_text table needs delimited.extension (FileExtension), "
                    "e.g. tsv"))
            return None
        if fmt not in DELIMITED_FORMATS:
            self.problems.append(locate.problem(
                "delimited", f"delimited applies to csv and delimited_text tables, not {fmt}",
                at_key=True))
            return None
        extension = raw.get("extension")
        if extension is not None:
            extension = extension.strip().lstrip(".")
            if not extension or mirroring.unsafe_name_reason(extension) or "." in extension:
                self.problems.append(locate.problem(
                    ("delimited", "extension"),
                    f"extension '{raw['extension']}' is not a file extension such as 'tsv'"))
            elif extension.lower() == "parquet":
                self.problems.append(locate.problem(
                    ("delimited", "extension"), "parquet is not a delimited text extension"))
        elif fmt == "delimited_text":
            self.problems.append(locate.problem(
                "delimited", "delimited_text needs delimited.extension (FileExtension), e.g. tsv",
                at_key=True))
        encoding = raw.get("encoding")
        if encoding is not None:
            try:
                codecs.lookup(encoding)
            except LookupError:
                self.problems.append(locate.problem(
                    ("delimited", "encoding"), f"unknown encoding '{encoding}'",
                    hint="use an encoding name such as UTF-8, UTF-16, windows-1252 or ascii"))
        properties = {DELIMITED_KEYS[k]: v for k, v in raw.items() if k in DELIMITED_KEYS}
        return Delimited(extension, properties)

    def _infer(self, source: Source, columns: tuple[Column, ...], keys: tuple[str, ...],
               locate: "_Locator") -> tuple[tuple[Column, ...], tuple[str, ...], tuple[str, ...]]:
        """Columns/keys the YAML leaves out, taken from the feed; conflicts are problems."""
        schema = self._ask_feed(source, locate)
        if schema is None:
            return columns, keys, ()
        origin = f" ({schema.origin})" if getattr(schema, "origin", "") else ""
        feed_columns = tuple(Column(c.name, mirroring.canonical_data_type(c.data_type),
                                    bool(c.nullable)) for c in schema.columns)
        feed_keys = tuple(schema.key_columns)
        self._compare_with_feed(columns, keys, feed_columns, feed_keys, origin, locate,
                                bool(getattr(schema, "types_guessed", False)))
        notes = []
        if not columns and feed_columns:
            for column, raw in zip(feed_columns, schema.columns):
                if column.type is None:
                    self.problems.append(locate.problem(
                        "source", f"the feed{origin} gives column '{column.name}' the type "
                        f"{raw.data_type!r}, which is not a DataType",
                        hint="declare the table's columns with their types in the YAML"))
            columns = feed_columns
            notes.append(f"columns {', '.join(c.name for c in columns)} from the feed{origin}")
        if not keys and feed_keys:
            keys = feed_keys
            notes.append(f"key_columns {', '.join(keys)} from the feed{origin}")
        return columns, keys, tuple(notes)

    def _ask_feed(self, source: Source, locate: "_Locator") -> Any:
        path = resolve_location(cast(str, source.path), self.loaded.project_dir)
        try:
            return self.infer(source.type, path, resolve_options(
                source.type, dict(source.options), str(self.loaded.project_dir)))
        except MirrorspecError as exc:
            self.problems.append(locate.problem(
                "source", f"cannot read the feed's schema: {exc.render()}"))
        except OSError:
            pass  # no feed files yet: nothing to infer, nothing wrong
        except Exception as exc:  # noqa: BLE001 - a reader bug must not hide the located table
            self.problems.append(locate.problem(
                "source", f"the {source.type} reader failed to read the feed's schema: "
                f"{type(exc).__name__}: {exc}"))
        return None

    def _compare_with_feed(self, columns: tuple[Column, ...], keys: tuple[str, ...],
                           feed_columns: tuple[Column, ...], feed_keys: tuple[str, ...],
                           origin: str, locate: "_Locator", types_guessed: bool = False
                           ) -> None:
        if columns and feed_columns:
            by_name = {c.name.lower(): c for c in feed_columns}
            for index, column in enumerate(columns):
                other = by_name.get(column.name.lower())
                if other is None:
                    self.problems.append(locate.problem(
                        ("columns", index, "name"),
                        f"column '{column.name}' is not in the feed{origin}"
                        + suggest(column.name, [c.name for c in feed_columns])))
                elif column.type and other.type and column.type != other.type \
                        and not types_guessed:
                    self.problems.append(locate.problem(
                        ("columns", index, "type"),
                        f"column '{column.name}' is {column.type} here but {other.type} "
                        f"in the feed{origin}"))
        if keys and feed_keys and [k.lower() for k in keys] != [k.lower() for k in feed_keys]:
            self.problems.append(locate.problem(
                "key_columns", f"key_columns {list(keys)} differ from the feed's key "
                f"{list(feed_keys)}{origin}",
                hint="remove key_columns to use the feed's key, or fix them"))

    # data tests ------------------------------------------------------------------------------
    def _tests(self, table: Table, locate: "_Locator", by_id: dict[str, Table],
               by_name: dict[str, list[Table]]) -> tuple[dict[str, Any], ...]:
        result = []
        declared = [c.name for c in table.columns]
        for index, raw in enumerate(table.tests):
            where = ("tests", index)
            if isinstance(raw, str):
                kind, params = raw, {}
            else:
                kind, params = next(iter(raw.items()))
                params = dict(params or {})
            test: dict[str, Any] = {"type": kind, "severity": params.pop("severity", "error")}
            if kind in ("unique", "not_null"):
                cols = list(params.get("columns") or table.key_columns)
                if not cols:
                    self.problems.append(locate.problem(
                        where, f"{kind} needs columns: the table has no key_columns",
                        hint=f"write `{kind}: {{columns: [...]}}`"))
                    continue
                test["columns"] = cols
                for column in params.get("columns") or ():
                    self._check_column(column, declared, locate, where, kind)
            elif kind == "accepted_values":
                test["column"] = params["column"]
                test["values"] = list(params["values"])
                self._check_column(params["column"], declared, locate, where, kind)
            elif kind == "relationships":
                other = self._resolve_table(params["to"], by_id, by_name, locate, where)
                if other is None:
                    continue
                field_name = params.get("field") or params["column"]
                self._check_column(params["column"], declared, locate, where, kind)
                self._check_column(field_name, [c.name for c in other.columns], locate, where,
                                   f"{kind} (in {other.unique_id})")
                test.update(column=params["column"], to=other.unique_id, field=field_name)
            elif kind == "freshness":
                test["max_age_seconds"] = int(params["max_age_seconds"])
            result.append(test)
        return tuple(result)

    def _check_column(self, column: str, declared: list[str], locate: "_Locator",
                      where: tuple[Any, ...], what: str) -> None:
        if declared and column not in declared:
            self.problems.append(locate.problem(
                where, f"{what}: '{column}' is not a declared column" + suggest(column, declared)))

    def _resolve_table(self, to: str, by_id: dict[str, Table], by_name: dict[str, list[Table]],
                       locate: "_Locator", where: tuple[Any, ...]) -> Table | None:
        if "." in to and to.lower() in by_id:
            return by_id[to.lower()]
        matches = by_name.get(to.lower(), [])
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            self.problems.append(locate.problem(
                where, f"relationships: '{to}' is ambiguous ({', '.join(t.unique_id for t in matches)}); "
                "write schema.table"))
            return None
        self.problems.append(locate.problem(
            where, f"relationships: no table '{to}' in the project" + suggest(to, sorted(by_id))))
        return None


def _salvage(raw: Any, bad: list[tuple[Any, ...]]) -> tuple[dict[str, Any], tuple[Any, ...]] | None:
    """A copy of table mapping `raw` without the keys holding schema errors, and those paths;
    None when an error concerns the table itself or a whole list item (nothing to build on)."""
    if not isinstance(raw, dict) or not bad:
        return None
    copy = _deep_copy(raw)
    for parts in bad:
        if not parts or not isinstance(parts[-1], str):
            return None
        parent = copy
        for part in parts[:-1]:
            try:
                parent = parent[part]
            except (KeyError, IndexError, TypeError):
                return None
        if not isinstance(parent, dict):
            return None
        parent.pop(parts[-1], None)
    return copy, tuple(bad)


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _drop_overlapping(problems: list[MirrorspecError], start: int, pruned: tuple[Any, ...]) -> None:
    """Remove problems (from `start`) located at, above or below a pruned key path."""
    def overlaps(parts: tuple[Any, ...]) -> bool:
        if parts[0] != "tables":
            return False  # located in the project's defaults
        inner = parts[2:]
        return any(inner[:len(p)] == p[:len(inner)] for p in pruned)

    problems[start:] = [p for p in problems[start:]
                        if p.location is None or not p.location.parts
                        or not overlaps(p.location.parts)]


class _Locator:
    """Locates a merged table's keys: in its own file, else in the project's `defaults:`."""

    pruned: tuple[Any, ...] = ()  # key paths removed from a salvaged table (see _salvage)

    def __init__(self, doc: Document, path: tuple[Any, ...], raw: Mapping[str, Any], project_doc: Document,
                 defaults: Mapping[str, Any]):
        self.doc = doc
        self.path = path
        self.raw = raw
        self.project_doc = project_doc
        self.defaults = defaults

    def at(self, key: str | tuple[Any, ...], at_key: bool = False) -> Location:
        parts = key if isinstance(key, tuple) else (key,)
        if parts[0] not in self.raw and parts[0] in self.defaults:
            return self.project_doc.location(("defaults",) + parts, at_key)
        return self.doc.location(self.path + parts, at_key)

    def problem(self, key: str | tuple[Any, ...], message: str, at_key: bool = False,
                hint: str | None = None) -> MirrorspecError:
        return MirrorspecError(message, self.at(key, at_key), hint)


def fmt_of(table: Mapping[str, Any]) -> str:
    return table.get("format") or "parquet"


@dataclass(frozen=True)
class _Within:
    """A locator for key paths below `prefix` of a merged table."""

    locate: "_Locator"
    prefix: tuple[Any, ...]

    def problem(self, path: tuple[Any, ...], message: str, at_key: bool = False,
                hint: str | None = None) -> MirrorspecError:
        return self.locate.problem(self.prefix + path, message, at_key, hint)


def _source_split(defaults: Any, table: Any) -> bool:
    """True when a source's type and its options come one from `defaults:`, one from the table:
    the only case no single document's schema check sees whole."""
    if not isinstance(defaults, Mapping) or not isinstance(table, Mapping):
        return False
    return any(key in table and key not in defaults and other in defaults and other not in table
               for key, other in (("type", "options"), ("options", "type")))


def _merge_defaults(defaults: Mapping[str, Any], table: Mapping[str, Any]) -> dict[str, Any]:
    """A table's keys over the project defaults; mappings merge, tags and tests add up."""
    merged = dict(defaults)
    for key, value in table.items():
        base = merged.get(key)
        if key in _ADDITIVE_KEYS and isinstance(base, list) and isinstance(value, list):
            merged[key] = base + value
        elif isinstance(base, dict) and isinstance(value, dict):
            merged[key] = _deep_merge(base, value)
        else:
            merged[key] = value
    return merged


def _deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(base)
    for key, value in top.items():
        if isinstance(result.get(key), dict) and isinstance(value, dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def _replace(table: Table, **changes: Any) -> Table:
    return replace(table, **changes)


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)
