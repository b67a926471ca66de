"""The downstream recipes of docs/readers.md ("Downstream, incrementally"), read from the page
as written, and what their tests need to run them: the pipeline project written out, the
`spark-pipelines` command, a Spark Connect server in the shared session's JVM, and the rows a
table holds (tests/spark/test_change_data_feed.py runs them after each of its passes;
tests/spark/test_downstream_recipes.py, marked `extra`, the rest)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.reference_model import read_delta_rs

DOC = Path(__file__).resolve().parents[2] / "docs" / "readers.md"


def snippet(name: str, language: str = "python") -> str:
    match = re.search(rf"<!-- downstream: {name} -->\n```{language}\n(.*?)```", DOC.read_text(),
                      re.S)
    assert match, name
    return match.group(1)


def recipe(name: str) -> dict:
    """The names a python recipe of the page defines."""
    scope: dict = {}
    exec(compile(snippet(name), f"readers.md {name}", "exec", dont_inherit=True), scope)
    return scope


def rows(records, columns=("id", "v", "note")) -> list[tuple]:
    return sorted(tuple(r.get(c) for c in columns) for r in records)


def mirrored(path, columns=("id", "v", "note")) -> list[tuple]:
    """The rows of the Delta table at `path` (delta-rs), over `columns`."""
    return rows(read_delta_rs(str(path))[1], columns)


def duck_rows(database: str, table: str = "orders") -> list[tuple]:
    import duckdb

    con = duckdb.connect(database)
    try:
        found = con.sql(f"SELECT * FROM {table}")
        return rows([dict(zip(found.columns, r)) for r in found.fetchall()])
    finally:
        con.close()


def pipeline_project(folder: Path, source: str, storage: Path, database: str) -> Path:
    """The page's pipeline project, its spec pointed at `source`, `storage`, `database`."""
    spec = yaml.safe_load(snippet("sdp-spec", "yaml"))
    spec.update(storage=storage.as_uri(), database=database,
                configuration={"mirrorspec.orders": source})
    (folder / "transformations").mkdir(parents=True)
    (folder / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    (folder / "transformations" / "orders_changes.py").write_text(snippet("sdp-python"))
    (folder / "transformations" / "orders_silver.sql").write_text(snippet("sdp-sql", "sql"))
    return folder / "spark-pipeline.yml"


def spark_pipelines(*args: str, env: dict | None = None, cwd: Path | None = None
                    ) -> subprocess.CompletedProcess:
    """The `spark-pipelines` command pyspark installs beside this Python; it must complete."""
    command = Path(sys.executable).parent / "spark-pipelines"
    environ = {**os.environ, **(env or {}), "PYSPARK_PYTHON": sys.executable,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([str(command), *args], capture_output=True, text=True, env=environ,
                          timeout=900, cwd=cwd)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "Run is COMPLETED" in done.stdout + done.stderr
    return done


def start_connect_server(spark):
    """A Spark Connect server in `spark`'s JVM (it has Delta) on a free port: (url, stop)."""
    jvm, context = spark._jvm, spark.sparkContext._jsc.sc()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    context.conf().set("spark.connect.grpc.binding.address", "127.0.0.1")
    context.conf().set("spark.connect.grpc.binding.port", str(port))
    service = jvm.org.apache.spark.sql.connect.service.SparkConnectService
    service.start(context)

    def stop() -> None:
        none = jvm.scala.Option.apply(None)
        service.stop(none, none)

    return f"sc://127.0.0.1:{port}", stop
