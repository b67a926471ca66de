"""dbt-style table selection over a compiled plan (pure Python).

A selector is one of:

- a table name (`orders`), a unique id (`sales.orders`), or a glob over either (`sales.*`,
  `ord*`, `*.order_?`); names are matched case-insensitively, as Fabric's SQL endpoint does;
- `source:<type>` (`source:qlik_replicate`, globs allowed), `tag:<tag>`, `schema:<schema>`,
  `name:<name>`, `id:<unique id>` (the explicit forms of the above);
- `state:modified` / `state:new` with a previous `target/` (`--state PATH`): a table is modified
  when its compiled plan entry differs from the one in PATH/plan.json (where the project or target
  sits on disk is not a difference), new when PATH has no such table; `state:modified` includes new
  tables, as in dbt;
- `result:<status>` with the last invocation's `run_results.json` / `test_results.json` (in the
  `--state PATH` folder, else the project's target folder): the tables whose run ended in that
  status (`error`, `skipped`, `success`, `waiting`, `not_started`) or that have a data test in it
  (`fail`, `warn`, `pass`, `error`, `skipped`), as dbt's `result:` selectors.

Several selectors (separate arguments, or separated by spaces or commas) are a union; `--exclude`
removes what its selectors match. An unknown method is an error; selecting nothing is a warning.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mirrorspec.artifacts.plan import Plan, TablePlan, read_plan
from mirrorspec.base.errors import SelectionError

METHODS = ("name", "id", "schema", "source", "tag", "state", "path", "result")
STATE_VALUES = ("modified", "new")
RESULT_VALUES = ("error", "fail", "skipped", "success", "waiting", "not_started", "warn", "pass")
RESULT_FILES = ("run_results.json", "test_results.json")


@dataclass(frozen=True)
class Selector:
    """One parsed selector: `method:value` (method None for a bare name, id or glob)."""

    method: str | None
    value: str

    def __str__(self) -> str:
        return f"{self.method}:{self.value}" if self.method else self.value


def split_selectors(args: Iterable[str] | str | None) -> list[str]:
    """Flatten `--select a b,c` style arguments into single selector strings."""
    if args is None:
        return []
    if isinstance(args, str):
        args = [args]
    out: list[str] = []
    for arg in args:
        for part in str(arg).replace(",", " ").split():
            if part:
                out.append(part)
    return out


def parse_selector(text: str) -> Selector:
    """Parse `method:value` or a bare name/glob; unknown methods raise SelectionError."""
    if ":" in text:
        method, _, value = text.partition(":")
        method = method.strip().lower()
        if method not in METHODS:
            raise SelectionError(
                f"unknown selector method {method!r} in {text!r}",
                hint=f"use one of {', '.join(m + ':' for m in METHODS)} or a table name / glob")
        if not value:
            raise SelectionError(f"selector {text!r} has no value after '{method}:'")
        if method == "state" and value.lower() not in STATE_VALUES:
            raise SelectionError(
                f"unknown state selector {text!r}",
                hint="use state:modified or state:new (with --state PATH)")
        if method == "result" and value.lower() not in RESULT_VALUES:
            raise SelectionError(f"unknown result selector {text!r}",
                                 hint=f"use result:{', result:'.join(RESULT_VALUES)}")
        return Selector(method, value.lower() if method == "result" else value)
    return Selector(None, text)


def _match(pattern: str, value: str | None) -> bool:
    if value is None:
        return False
    return fnmatch.fnmatchcase(value.lower(), pattern.lower())


def _path_key(table: TablePlan) -> str:
    return table.yaml_file or ""


def comparable_entry(table: TablePlan, plan: Plan) -> dict[str, Any]:
    """A table's plan entry without where the project and target sit on disk."""
    entry = asdict(table)
    entry["landing_path"] = _relative(table.landing_path, plan.landing_zone)
    entry["delta_path"] = _relative(table.delta_path, plan.warehouse)
    return entry


def _relative(path: str, root: str) -> str:
    root = root.rstrip("/")
    if path == root:
        return "."
    if path.startswith(root + "/"):
        return path[len(root) + 1:]
    return path


def load_state_plan(state_path: str | os.PathLike[str]) -> Plan:
    """The plan of a previous run: PATH/plan.json for a target/ folder, or PATH itself."""
    path = Path(state_path)
    if path.is_dir():
        path = path / "plan.json"
    if not path.exists():
        raise SelectionError(f"--state {state_path}: no plan.json there",
                             hint="point --state at a previous target/ folder (with plan.json)")
    return read_plan(path)


class _StateIndex:
    def __init__(self, plan: Plan, state_plan: Plan):
        self.plan = plan
        self.state_plan = state_plan
        self.previous = {t.unique_id: t for t in state_plan.tables}

    def is_new(self, table: TablePlan) -> bool:
        return table.unique_id not in self.previous

    def is_modified(self, table: TablePlan) -> bool:
        old = self.previous.get(table.unique_id)
        if old is None:
            return True
        return comparable_entry(table, self.plan) != comparable_entry(old, self.state_plan)


class _ResultIndex:
    """unique_id → the statuses its last run and its data tests ended in (read on first use)."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self._statuses: dict[str, set[str]] | None = None

    def statuses(self, unique_id: str) -> set[str]:
        if self._statuses is None:
            self._statuses = self._load()
        return self._statuses.get(unique_id.lower(), set())

    def _load(self) -> dict[str, set[str]]:
        import json

        found = [self.folder / name for name in RESULT_FILES
                 if self.folder is not None and (self.folder / name).is_file()]
        if not found:
            where = f" in {self.folder}" if self.folder is not None else ""
            raise SelectionError(f"result: selectors need a previous run_results.json or "
                                 f"test_results.json{where}",
                                 hint="run `mirrorspec run` or `mirrorspec test` first, or "
                                      "point --state at a target/ folder that has them")
        out: dict[str, set[str]] = {}
        for path in found:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise SelectionError(f"{path}: not readable as JSON ({exc})",
                                     hint="run again to rewrite it") from None
            for entry in doc.get("results") or []:
                table = entry.get("unique_id") or entry.get("table")
                if table and entry.get("status"):
                    out.setdefault(str(table).lower(), set()).add(str(entry["status"]))
        return out


def _matcher(selector: Selector, state: _StateIndex | None,
             results: _ResultIndex | None = None) -> Callable[[TablePlan], bool]:
    value = selector.value
    method = selector.method
    if method is None:
        return lambda t: (_match(value, t.name) or _match(value, t.unique_id)
                          or (t.schema is not None and _match(value, f"{t.schema}.{t.name}")))
    if method == "name":
        return lambda t: _match(value, t.name)
    if method == "id":
        return lambda t: _match(value, t.unique_id)
    if method == "schema":
        return lambda t: _match(value, t.warehouse_schema) or _match(value, t.schema)
    if method == "source":
        return lambda t: _match(value, t.source.type)
    if method == "tag":
        return lambda t: any(_match(value, tag) for tag in t.tags)
    if method == "path":
        return lambda t: _match(value, _path_key(t)) or _match(value.rstrip("/") + "/*",
                                                                 _path_key(t))
    if method == "state":
        if state is None:
            raise SelectionError(f"selector {selector} needs --state PATH (a previous target/)")
        if value.lower() == "new":
            return state.is_new
        return state.is_modified
    if method == "result":
        index = results or _ResultIndex(None)
        return lambda t: value in index.statuses(t.unique_id)
    raise SelectionError(f"unknown selector method {method!r}")  # parse_selector prevents this


@dataclass(frozen=True)
class Selection:
    """The outcome of selecting: tables in plan order and what each selector matched."""

    tables: list[TablePlan]
    unmatched: list[str]  # selectors (select or exclude) that matched no table

    @property
    def unique_ids(self) -> list[str]:
        return [t.unique_id for t in self.tables]


def select_tables(plan: Plan, select: Sequence[str] | str | None = (),
                  exclude: Sequence[str] | str | None = (),
                  state_path: str | os.PathLike[str] | None = None,
                  state_plan: Plan | None = None,
                  results_dir: str | os.PathLike[str] | None = None) -> Selection:
    """Tables of `plan` chosen by `select` (all when empty) minus those matching `exclude`.

    `result:` selectors read the results in `state_path` (a folder, or the folder of its
    plan.json), else in `results_dir` (the project's target folder)."""
    select_items = [parse_selector(s) for s in split_selectors(select)]
    exclude_items = [parse_selector(s) for s in split_selectors(exclude)]
    state = None
    uses_state = any(s.method == "state" for s in select_items + exclude_items)
    if state_plan is None and state_path is not None and uses_state:
        state_plan = load_state_plan(state_path)
    if state_plan is not None:
        state = _StateIndex(plan, state_plan)
    results = _ResultIndex(_results_folder(state_path, results_dir))
    unmatched: list[str] = []
    if select_items:
        chosen: set[str] = set()
        for selector in select_items:
            match = _matcher(selector, state, results)
            hits = {t.unique_id for t in plan.tables if match(t)}
            if not hits:
                unmatched.append(str(selector))
            chosen |= hits
    else:
        chosen = {t.unique_id for t in plan.tables}
    for selector in exclude_items:
        match = _matcher(selector, state, results)
        hits = {t.unique_id for t in plan.tables if match(t)}
        if not hits:
            unmatched.append(str(selector))
        chosen -= hits
    return Selection([t for t in plan.tables if t.unique_id in chosen], unmatched)


def _results_folder(state_path: str | os.PathLike[str] | None,
                    results_dir: str | os.PathLike[str] | None) -> Path | None:
    if state_path is not None:
        path = Path(state_path)
        return path if path.is_dir() else path.parent
    return Path(results_dir) if results_dir is not None else None


def select_with_warnings(plan: Plan, select: Sequence[str] = (), exclude: Sequence[str] = (),
                         state_path: str | os.PathLike[str] | None = None,
                         console: Any = None,
                         results_dir: str | os.PathLike[str] | None = None) -> list[TablePlan]:
    """select_tables, warning through `console` about selectors that matched nothing."""
    selection = select_tables(plan, select, exclude, state_path=state_path,
                              results_dir=results_dir)
    if console is not None:
        for selector in selection.unmatched:
            console.warning(f"selector '{selector}' matched no table", selector=selector)
        if not selection.tables:
            console.warning("nothing selected: no table matches the selection, so there "
                            "is nothing to do (`mirrorspec ls` lists the tables)",
                            select=list(split_selectors(select)),
                            exclude=list(split_selectors(exclude)))
    return selection.tables


def resolve_table(plan: Plan, name: str) -> TablePlan:
    """The one table `name` designates (unique id or table name, case-insensitive)."""
    wanted = name.lower()
    exact = [t for t in plan.tables if t.unique_id.lower() == wanted]
    if exact:
        return exact[0]
    by_name = [t for t in plan.tables if t.name.lower() == wanted
               or (t.schema and f"{t.schema}.{t.name}".lower() == wanted)]
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        ids = ", ".join(t.unique_id for t in by_name)
        raise SelectionError(f"table name {name!r} is ambiguous: {ids}",
                             hint="give the unique id (<schema>.<table>)")
    known = ", ".join(t.unique_id for t in plan.tables) or "(none)"
    raise SelectionError(f"no table {name!r} in the project", hint=f"tables: {known}")
