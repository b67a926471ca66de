"""Fixtures for the cluster tests: real Spark daemons, started and always stopped here.

These tests never use the shared in-process `spark` fixture: every Spark driver runs in a
`mirrorspec` subprocess (or a small Python subprocess for Spark Connect clients), so a remote
session never mixes with the test run's own SparkSession. Everything here carries the `cluster`
and `slow` markers; run them with `pytest -m cluster`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spark_processes as sp  # tests/cluster is on sys.path (pytest rootdir conftest import)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PROJECT = REPO_ROOT / "projects" / "parquet_orders"
MIRRORSPEC = [sys.executable, "-m", "mirrorspec"]
RUN_TIMEOUT = 600  # seconds; a guard against a hung daemon, not a timing assertion


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: starts Spark daemons (standalone cluster, "
                                       "Spark Connect server); slow")


def pytest_collection_modifyitems(config, items):
    here = str(Path(__file__).parent)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.cluster)
            item.add_marker(pytest.mark.slow)


def run_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None,
            timeout: int = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    """Run `python -m mirrorspec ARGS` in `cwd`; output is captured for assertion messages."""
    full_env = dict(os.environ)
    full_env.setdefault("MIRRORSPEC_SPARK_LOG_LEVEL", "ERROR")
    full_env.update(env or {})
    return subprocess.run(MIRRORSPEC + args, cwd=str(cwd), env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def describe(result: subprocess.CompletedProcess) -> str:
    return (f"exit {result.returncode}\n--- stdout ---\n{result.stdout[-4000:]}"
            f"\n--- stderr ---\n{result.stderr[-4000:]}")


def write_profiles(project: Path, outputs: dict[str, dict]) -> None:
    """profiles.yml for the copied example project with the given outputs."""
    import yaml

    doc = {EXAMPLE_PROJECT.name: {"target": "local", "outputs": outputs}}
    (project / "profiles.yml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def copy_example_project(destination: Path) -> Path:
    """A fresh copy of the example project (no target/, landing zone or warehouse)."""
    shutil.copytree(EXAMPLE_PROJECT, destination,
                    ignore=shutil.ignore_patterns("target", "landing_zone*", "warehouse*",
                                                  "__pycache__", "logs"))
    return destination


def seed_landing_zone(project: Path, landing_zone: str) -> None:
    """Put the example's sample landing files into `landing_zone` (relative to the project)."""
    shutil.copytree(project / "seed_files", project / landing_zone, dirs_exist_ok=True)


def local_output(name: str) -> dict:
    return {"landing_zone": f"landing_zone_{name}", "warehouse": f"warehouse_{name}",
            "spark": {"master": "local[2]",
                      "conf": {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g",
                               "spark.ui.enabled": "false"}}}


def read_tables(warehouse: Path) -> dict[str, list[tuple]]:
    """Every Delta table under WAREHOUSE/<schema>/<table>, read with the `deltalake` package
    (an independent reader), as sorted row tuples keyed by `schema.table`."""
    import pyarrow as pa
    from deltalake import DeltaTable

    tables = {}
    for log in sorted(warehouse.glob("*/*/_delta_log")):
        table_dir = log.parent
        # scan() (delta-kernel) applies deletion vectors; to_pyarrow_table() refuses them.
        data = pa.RecordBatchReader.from_stream(DeltaTable(str(table_dir)).scan()).read_all()
        names = sorted(data.column_names)
        rows = [tuple(row[n] for n in names) for row in data.select(names).to_pylist()]
        tables[f"{table_dir.parent.name}.{table_dir.name}"] = (names, sorted(rows, key=repr))
    return tables


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory):
    """The example project mirrored in local mode once: the tables other modes must equal."""
    project = copy_example_project(tmp_path_factory.mktemp("reference") / "project")
    write_profiles(project, {"local": local_output("local")})
    seed_landing_zone(project, "landing_zone_local")
    result = run_cli(["run", "--project-dir", str(project), "--target", "local"], cwd=project)
    assert result.returncode == 0, describe(result)
    tables = read_tables(project / "warehouse_local")
    assert tables, f"the local run wrote no Delta table\n{describe(result)}"
    return tables


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    """A standalone master and two workers (1 core, 1g each) on 127.0.0.1; always stopped."""
    cluster = sp.start_standalone(tmp_path_factory.mktemp("standalone"), workers=2, cores=1,
                                  memory="1g")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """A Spark Connect server with Delta Lake on 127.0.0.1; yields its sc:// URL."""
    from mirrorspec.spark.platform import jars

    delta = jars.cached_jars()
    if not delta:
        pytest.fail("Delta jars are not cached; run `python -m mirrorspec.spark.platform.jars` first")
    daemon, url = sp.start_connect_server(tmp_path_factory.mktemp("connect"), delta)
    try:
        yield url
    finally:
        daemon.stop()
