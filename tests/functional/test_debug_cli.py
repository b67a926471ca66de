"""`mirrorspec debug` and setup failures through the CLI: each failure is exit 1 with
the fix named, never "Internal error … please report it" (exit 2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "mirrorspec", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(REPO / "projects" / "parquet_orders", project)
    return project


def test_debug_lists_every_check_and_passes_without_spark(tmp_path):
    result = _cli("debug", "--no-spark", "--project-dir", str(_project(tmp_path)), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for check in ("python", "pyspark", "delta-spark", "java", "jar cache", "jars: delta",
                  "jars: s3", "jars: kafka", "project", "profile", "landing zone", "warehouse",
                  "state"):
        assert f"\n{check} " in result.stdout, check
    assert "parquet_orders: 4 table(s)" in result.stdout
    assert "output 'dev'; Spark master local[2]" in result.stdout
    assert "all checks passed (Spark not started: --no-spark)" in result.stdout


def test_debug_names_the_fix_for_no_java_and_an_unreachable_jdbc_server(tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _cli("debug", "--jdbc", f"jdbc:postgresql://127.0.0.1:{port}/db", cwd=tmp_path,
                  env={"JAVA_HOME": str(tmp_path / "no-jdk")})
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {line.split()[0] + (" " + line.split()[1] if line.startswith("j") else ""): line
             for line in result.stdout.splitlines() if line.strip()}
    assert "FAIL" in lines["java FAIL"] and "openjdk-17" in lines["java FAIL"]
    assert "spark start" in result.stdout and "no usable Java" in result.stdout
    assert f"127.0.0.1:{port}" in result.stdout and "start the database" in result.stdout
    assert "2 check(s) failed: java, jdbc 127.0.0.1" in result.stderr
    assert "Internal error" not in result.stderr


def test_run_without_java_is_a_setup_error_naming_the_fix(tmp_path):
    project = _project(tmp_path)
    result = _cli("run", "--project-dir", str(project), cwd=tmp_path,
                  env={"JAVA_HOME": str(tmp_path / "no-jdk")})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Spark needs Java, and none was found (JAVA_HOME=" in result.stderr
    assert "hint: install a Java 17 or 21 runtime" in result.stderr
    assert "Internal error" not in result.stderr and "please report" not in result.stderr
