"""`mirrorspec debug`'s Spark start test, in a subprocess (its own JVM): it passes with the
project's profile, and a JVM that can't start is a located setup failure, not an internal
error."""

from __future__ import annotations

import pytest

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

pytestmark = pytest.mark.extra  # a slow end-to-end extra: `make test-extras`

REPO = Path(__file__).resolve().parents[2]


def _debug(project: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), MIRRORSPEC_LOG_DIR=str(project))
    return subprocess.run([sys.executable, "-m", "mirrorspec", "debug", "--project-dir",
                           str(project)], cwd=project, env=env, capture_output=True, text=True,
                          timeout=600)


def test_spark_start_check_passes_and_a_broken_jvm_option_names_its_log(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(REPO / "projects" / "parquet_orders", project)
    result = _debug(project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "a Delta table written and read back in" in result.stdout
    assert "starting Spark…" in result.stdout

    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    conf = profiles["parquet_orders"]["outputs"]["dev"]["spark"]["conf"]
    conf["spark.driver.extraJavaOptions"] = "-Xss1k"  # too small a stack: the JVM refuses
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))
    result = _debug(project)
    assert result.returncode == 1, result.stdout + result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("spark start"))
    assert "FAIL" in line and "Spark's JVM exited while starting" in line
    assert "stack size specified is too small" in line and "mirrorspec-spark-" in line
    assert "Internal error" not in result.stderr
