"""Write the static docs site (Jinja2 templates shipped in mirrorspec/docsite/templates/)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mirrorspec.artifacts.plan import Plan
from mirrorspec.docsite.collect import SiteData, collect, lineage, state_of
from mirrorspec.docsite.lineage import render_svg
from mirrorspec.openmirroring.mirroring import dumps_json

TEMPLATES = Path(__file__).parent / "templates"


def _environment():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html"]),
                             # monitoring/run JSON come from other tools: tolerate missing fields
                             undefined=jinja2.ChainableUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["tojson_pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)
    env.filters["number"] = _number
    env.filters["state"] = state_of
    env.filters["bytes"] = _bytes
    return env


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return f"{value:,}"


def _bytes(value: Any) -> str:
    if not isinstance(value, int):
        return "—"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} TiB"


def generate_site(plan: Plan, out_dir: str | os.PathLike, status: dict[str, Any] | None = None,
                  run_results: dict[str, Any] | None = None,
                  delta: dict[str, Any] | None = None,
                  test_results: dict[str, Any] | None = None) -> Path:
    """Write index.html, one page per table and catalog.json into `out_dir` (replacing it).

    `status`: the monitoring JSON; `run_results`: run_results.json; `delta`: unique_id →
    delta_stats.DeltaSummary; `test_results`: test_results.json. All optional: the site shows
    what is known."""
    out = Path(out_dir)
    site = collect(plan, status, run_results, delta, test_results)
    env = _environment()
    staging = out.with_name(f"{out.name}.tmp{os.getpid()}")  # two writers don't collide
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "tables").mkdir(parents=True)
    nodes, edges = lineage(site.tables)
    index = env.get_template("index.html").render(
        site=site, root="", lineage_svg=render_svg(nodes, edges, "Lineage of every table"),
        counts=site.counts())
    (staging / "index.html").write_text(index, encoding="utf-8")
    for table in site.tables:
        nodes, edges = lineage([table], page_prefix="../", everything=site.tables)
        page = env.get_template("table.html").render(
            site=site, table=table, root="../",
            lineage_svg=render_svg(nodes, edges, f"Lineage of {table.unique_id}"))
        (staging / table.page).write_text(page, encoding="utf-8")
    (staging / "catalog.json").write_text(dumps_json(_catalog(site)), encoding="utf-8")
    _swap_in(staging, out)
    return out


def _swap_in(staging: Path, out: Path) -> None:
    """Replace `out` by `staging` with two renames (the old site moved aside first), so a
    server never sees a half-written site and a concurrent writer's site wins whole."""
    for _attempt in range(5):
        old = out.with_name(f"{out.name}.old{os.getpid()}")
        try:
            if out.exists():
                os.replace(out, old)
            os.replace(staging, out)
        except OSError:
            continue  # another writer swapped in between: try again
        finally:
            shutil.rmtree(old, ignore_errors=True)
        return
    shutil.rmtree(staging, ignore_errors=True)
    raise OSError(f"could not replace {out}: another process keeps rewriting it")


def _catalog(site: SiteData) -> dict[str, Any]:
    doc = asdict(site)
    for table in doc["tables"]:
        table.pop("metadata_json", None)
    for table, view in zip(doc["tables"], site.tables):
        table["metadata"] = json.loads(view.metadata_json)
        table["state"] = view.state
        for column, column_view in zip(table["columns"], view.columns):
            column["origin"] = column_view.origin
        if isinstance(table.get("delta"), dict):
            for entry in table["delta"].get("history") or []:
                entry.pop("user_metadata", None)  # the engine's bookkeeping, not for readers
                entry.pop("metrics", None)
    return doc
