"""What the docs site shows, gathered from the plan, the monitoring JSON, run_results.json,
test_results.json and each Delta table's log (delta_stats)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.docsite.lineage import Edge, Node
from mirrorspec.openmirroring.mirroring import dumps_json, spark_type_for, table_folder

# Status words (Fabric's monitoring statuses and run_results statuses) → how a badge looks.
_STATE_OF = {"running": "ok", "replicating": "ok", "success": "ok", "succeeded": "ok",
             "waiting": "warn", "paused": "warn", "skipped": "warn", "warn": "warn",
             "stopped": "warn", "notstarted": "none", "not_started": "none",
             "failed": "failed", "error": "failed", "dropped": "failed", "fail": "failed",
             "pass": "ok"}


def state_of(status: str | None) -> str:
    """ok | warn | failed | none: the colour of a status badge."""
    if not status:
        return "none"
    return _STATE_OF.get(str(status).replace(" ", "").lower(), "warn")


@dataclass
class ColumnView:
    """A column as declared in the YAML and/or as observed in the Delta table."""

    name: str
    type: str | None  # declared DataType
    spark_type: str | None  # the Spark type the declared DataType maps to
    nullable: bool | None  # None: not known (no declared type, or only observed)
    key: bool
    description: str | None = None
    declared: bool = True
    observed_type: str | None = None  # from the Delta schema; None when not in the table
    observed: bool = False

    @property
    def origin(self) -> str:
        """declared | observed (arrived by column union) | not yet in the Delta table."""
        if self.declared and self.observed:
            return "declared"
        if self.observed:
            return "observed"
        return "pending"

    @property
    def search_entry(self) -> list[str]:
        """[name, description] for the index's search box."""
        return [self.name, self.description or ""]

    @property
    def type_differs(self) -> bool:
        return bool(self.observed and self.spark_type and self.observed_type
                    and self.observed_type.lower() != self.spark_type.lower())


@dataclass
class TestView:
    """A declared data test and its last result (target/test_results.json)."""

    __test__ = False  # not a pytest class

    type: str
    severity: str
    params: dict[str, Any]
    status: str | None = None  # pass | warn | fail | error | skipped; None: never run
    failures: int = 0
    message: str = ""
    related: str | None = None  # unique id of the table a relationships test points to
    related_page: str | None = None


@dataclass
class TableView:
    """One table as the site shows it."""

    unique_id: str
    name: str
    schema: str
    page: str  # path of its page, relative to the site root
    description: str | None
    tags: list[str]
    source_type: str
    source_path: str | None
    source_options: dict[str, Any]
    landing_folder: str
    landing_path: str
    delta_path: str
    file_format: str
    keys: list[str]
    columns: list[ColumnView]
    metadata_json: str
    tests: list[TestView]
    recreate: bool
    yaml_file: str | None
    status: dict[str, Any] | None = None  # from WAREHOUSE/tables.json
    run: dict[str, Any] | None = None  # from target/run_results.json
    delta: Any = None  # a delta_stats.DeltaSummary, when the Delta table exists locally
    tests_run_at: str | None = None  # started_at of the test_results.json the results are from
    related: list[tuple[str, str, str]] = field(default_factory=list)  # (direction, id, page)

    @property
    def test_counts(self) -> dict[str, int]:
        out = {"pass": 0, "warn": 0, "fail": 0, "error": 0, "skipped": 0, "not run": 0}
        for test in self.tests:
            out[test.status or "not run"] = out.get(test.status or "not run", 0) + 1
        return out

    @property
    def history(self) -> list[Any]:
        return list(getattr(self.delta, "history", None) or [])

    @property
    def state(self) -> str:
        if self.status:
            return state_of(self.status.get("status"))
        if self.run:
            return state_of(self.run.get("status"))
        return "none"

    @property
    def status_text(self) -> str:
        if self.status and self.status.get("status"):
            return str(self.status["status"])
        if self.run and self.run.get("status"):
            return str(self.run["status"])
        return "not run"

    @property
    def processed_rows(self) -> int | None:
        metrics = (self.status or {}).get("metrics") or {}
        value = metrics.get("processedRows")
        return value if isinstance(value, int) else None


@dataclass
class SiteData:
    project_name: str
    project_version: str
    target: str
    landing_zone: str
    warehouse: str
    tables: list[TableView] = field(default_factory=list)
    replicator: dict[str, Any] | None = None
    run_started_at: str | None = None
    run_command: str | None = None

    def counts(self) -> dict[str, int]:
        out = {"tables": len(self.tables), "ok": 0, "warn": 0, "failed": 0, "none": 0}
        for table in self.tables:
            out[table.state] += 1
        return out


def collect(plan: Plan, status: dict[str, Any] | None = None,
            run_results: dict[str, Any] | None = None,
            delta: dict[str, Any] | None = None,
            test_results: dict[str, Any] | None = None) -> SiteData:
    """Build the site's data. `status` is the monitoring JSON (tables.json object), `run_results`
    the run_results.json object, `delta` unique_id → DeltaSummary, `test_results` the
    test_results.json object; each may be None."""
    status_by_table = _index_status(status)
    run_by_table = {r.get("unique_id"): r for r in (run_results or {}).get("results", [])
                    if isinstance(r, dict)}
    pages: set[str] = set()
    tables = []
    for table in plan.tables:
        page = _page_name(table.unique_id, pages)
        view = _table_view(table, page)
        view.status = status_by_table.get(_status_key(table.warehouse_schema, table.name)) \
            or status_by_table.get(_status_key(table.schema or "", table.name))
        view.run = run_by_table.get(table.unique_id)
        view.delta = (delta or {}).get(table.unique_id)
        view.columns = _merge_observed(view.columns, view.keys, view.delta)
        tables.append(view)
    _link_tests(tables, test_results)
    return SiteData(plan.project_name, plan.project_version, plan.target, plan.landing_zone,
                    plan.warehouse, tables,
                    replicator=(status or {}).get("replicator") if status else None,
                    run_started_at=(run_results or {}).get("started_at"),
                    run_command=(run_results or {}).get("command"))


def lineage(tables: list[TableView], page_prefix: str = "",
            everything: list[TableView] | None = None) -> tuple[list[Node], list[Edge]]:
    """Nodes and edges of feed → landing folder → Delta table for `tables`, plus dashed
    relationships edges between Delta tables. Feeds collapse into one node per kind of source
    (all external publishers are one node), and the tables of a kind are drawn together. With
    `everything` (a table page), the tables related to `tables` are drawn too, as Delta tables
    only."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    kinds: dict[str, list[TableView]] = {}
    for table in tables:
        kinds.setdefault(table.source_type, []).append(table)
    for kind, members in kinds.items():
        nodes.append(Node(f"feed:{kind}", 0, *_feed_label(kind, members)))
    for kind, members in kinds.items():
        for table in members:
            landing, delta = f"lz:{table.unique_id}", f"delta:{table.unique_id}"
            nodes.append(Node(landing, 1, table.landing_folder, table.file_format))
            nodes.append(Node(delta, 2, table.unique_id, table.status_text,
                              href=page_prefix + table.page, state=table.state))
            edges.append(Edge(f"feed:{kind}", landing))
            edges.append(Edge(landing, delta))
    shown = {t.unique_id for t in tables}
    by_id = {t.unique_id: t for t in (everything or tables)}
    for table in list(tables):
        for direction, other_id, _page in table.related:
            other = by_id.get(other_id)
            if other is None:
                continue
            if other_id not in shown:
                shown.add(other_id)
                nodes.append(Node(f"delta:{other_id}", 2, other_id, other.status_text,
                                  href=page_prefix + other.page, state=other.state))
            source, target = ((table.unique_id, other_id) if direction == "to"
                              else (other_id, table.unique_id))
            edge = Edge(f"delta:{source}", f"delta:{target}", kind="reference")
            if edge not in edges:
                edges.append(edge)
    return nodes, edges


def _feed_label(kind: str, members: list[TableView]) -> tuple[str, str]:
    """Label and sublabel of the one node standing for every feed of a kind."""
    label = "external publisher" if kind == "landing_zone" else kind
    if len(members) == 1:
        if kind == "landing_zone":
            return label, "writes the landing folder"
        return label, _short_path(members[0].source_path)
    if kind == "landing_zone":
        return label, f"writes {len(members)} landing folders"
    feeds = {t.source_path for t in members}
    return label, f"{len(feeds)} feed{'s' if len(feeds) != 1 else ''} → {len(members)} folders"


def read_json_if_present(path: Path) -> dict[str, Any] | None:
    """A JSON object from `path`, or None when absent or unreadable (the site still builds)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _table_view(table: TablePlan, page: str) -> TableView:
    keys = list(table.key_columns)
    # Nullability is known for a column with a declared DataType (IsNullable, default true);
    # a column declared by name only says nothing about it.
    columns = [ColumnView(c.name, c.type, _spark_type(c.type),
                          (bool(c.nullable) if c.type else (False if not c.nullable else None)),
                          c.name in keys, c.description) for c in table.columns]
    return TableView(
        unique_id=table.unique_id, name=table.name, schema=table.warehouse_schema, page=page,
        description=table.description, tags=list(table.tags or []),
        source_type=table.source.type, source_path=table.source.path,
        source_options=dict(table.source.options or {}),
        landing_folder=table_folder(table.name, table.schema), landing_path=table.landing_path,
        delta_path=table.delta_path, file_format=table.file_format, keys=keys, columns=columns,
        metadata_json=dumps_json(table.metadata or {}),
        tests=[TestView(str(t.get("type")), str(t.get("severity") or "error"),
                        {k: v for k, v in t.items() if k not in ("type", "severity")})
               for t in table.tests or []],
        recreate=bool(table.recreate), yaml_file=table.yaml_file)


def _merge_observed(columns: list[ColumnView], keys: list[str], delta: Any) -> list[ColumnView]:
    """Declared columns beside the Delta table's actual ones: declared order first, then the
    columns only the table has (they arrived by column union)."""
    observed = list(getattr(delta, "columns", None) or [])
    if not observed:
        return columns
    by_name = {c.name.lower(): c for c in observed}
    merged = []
    for column in columns:
        actual = by_name.pop(column.name.lower(), None)
        if actual is not None:
            column.observed, column.observed_type = True, actual.type
        merged.append(column)
    for actual in observed:
        if actual.name.lower() in by_name:
            merged.append(ColumnView(actual.name, None, None, None, actual.name in keys,
                                     declared=False, observed=True, observed_type=actual.type))
    return merged


def _link_tests(tables: list[TableView], test_results: dict[str, Any] | None) -> None:
    """Attach each declared test's last result, and link relationships tests both ways."""
    from mirrorspec.artifacts.data_test_results import test_name

    by_name = {r.get("name"): r for r in (test_results or {}).get("results", []) or []
               if isinstance(r, dict)}
    by_id = {t.unique_id: t for t in tables}
    for table in tables:
        table.tests_run_at = (test_results or {}).get("started_at")
        for test in table.tests:
            raw = {"type": test.type, "severity": test.severity, **test.params}
            result = by_name.get(test_name(_NameOnly(table.unique_id), raw))
            if result is not None:
                test.status = str(result.get("status") or "") or None
                test.failures = int(result.get("failures") or 0)
                test.message = str(result.get("message") or "")
            other = by_id.get(str(test.params.get("to"))) if test.type == "relationships" else None
            if other is not None:
                test.related, test.related_page = other.unique_id, other.page
                if ("to", other.unique_id, other.page) not in table.related:
                    table.related.append(("to", other.unique_id, other.page))
                if ("from", table.unique_id, table.page) not in other.related:
                    other.related.append(("from", table.unique_id, table.page))


@dataclass(frozen=True)
class _NameOnly:
    unique_id: str


def _spark_type(data_type: str | None) -> str | None:
    if not data_type:
        return None
    try:
        return spark_type_for(data_type)
    except ValueError:
        return None


def _index_status(status: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    out = {}
    for entry in (status or {}).get("tables", []) or []:
        if isinstance(entry, dict) and entry.get("sourceTableName"):
            key = _status_key(entry.get("sourceSchemaName") or "", entry["sourceTableName"])
            out[key] = entry
    return out


def _status_key(schema: str, name: str) -> str:
    return f"{schema}.{name}".lower()


def _page_name(unique_id: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]", "_", unique_id) or "table"
    name, n = f"tables/{base}.html", 1
    while name.lower() in taken:
        n += 1
        name = f"tables/{base}-{n}.html"
    taken.add(name.lower())
    return name


def _short_path(path: str | None) -> str:
    if not path:
        return ""
    parts = str(path).rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else parts[0]
