"""The site from a compiled plan and what the runs left behind: the one place that gathers the
inputs (monitoring JSON, run_results.json, test_results.json, Delta logs) for `docs generate`
and for the refresh after `run`, `build` and `test`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mirrorspec.artifacts.plan import Plan
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.artifacts.data_test_results import TEST_RESULTS_FILE

DOCS_DIR = "docs"
RUN_RESULTS_FILE = "run_results.json"


def write_site(plan: Plan, target_dir: str | Path) -> tuple[Path, dict[str, Any]]:
    """Write <target_dir>/docs; returns its path and what was found (for the message)."""
    from mirrorspec.docsite.collect import read_json_if_present
    from mirrorspec.docsite.render import generate_site

    target = Path(target_dir)
    status = read_status(plan.warehouse)
    run_results = read_json_if_present(target / RUN_RESULTS_FILE)
    test_results = read_json_if_present(target / TEST_RESULTS_FILE)
    delta = delta_summaries(plan)
    out = generate_site(plan, target / DOCS_DIR, status, run_results, delta, test_results)
    return out, {"status": status is not None, "run_results": run_results is not None,
                 "test_results": test_results is not None, "delta_tables": len(delta)}


def refresh_site(console: Any, plan: Plan, target_dir: str | Path) -> None:
    """After `run`, `publish`, `build` or `test`: refresh an existing site and say so."""
    site = refresh_if_present(plan, target_dir)
    if site is not None:
        console.info(f"Docs site refreshed: {site / 'index.html'}", path=str(site))


def refresh_if_present(plan: Plan, target_dir: str | Path) -> Path | None:
    """Rewrite the site when <target_dir>/docs holds one (so a served site shows the run that
    just ended); None when there is no site. Never fails the command that ran."""
    if not (Path(target_dir) / DOCS_DIR / "index.html").is_file():
        return None
    try:
        return write_site(plan, target_dir)[0]
    except (OSError, MirrorspecError, ValueError):
        return None


def read_status(warehouse: str) -> dict[str, Any] | None:
    """The monitoring JSON of the warehouse, or None when nothing was mirrored yet."""
    from mirrorspec.artifacts.status import read_status as read

    if "://" in warehouse:
        return None  # a remote warehouse: the status is not readable without Spark
    try:
        status = read(warehouse)
    except (MirrorspecError, OSError, ValueError):
        return None
    return status if status.get("tables") or status.get("replicator") else None


def delta_summaries(plan: Plan) -> dict[str, Any]:
    """unique_id → DeltaSummary for the tables whose Delta table exists on a local path."""
    from mirrorspec.docsite.delta_stats import summarize

    out = {}
    for table in plan.tables:
        if "://" in table.delta_path:
            continue
        summary = summarize(table.delta_path)
        if summary is not None:
            out[table.unique_id] = summary
    return out
