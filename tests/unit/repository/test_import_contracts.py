"""The import contracts of pyproject.toml fail when a module is not placed or crosses a line:
a copy of the package with one throwaway module added, checked by lint-imports itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def _lint(tmp_path: Path, extra: dict[str, str]) -> subprocess.CompletedProcess:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "mirrorspec", src / "mirrorspec",
                    ignore=shutil.ignore_patterns("__pycache__", "*.json", "templates", "static"))
    for relative, text in extra.items():
        (src / relative).write_text(text, encoding="utf-8")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_tree_as_it_is_keeps_every_contract(tmp_path):
    result = _lint(tmp_path, {})
    assert result.returncode == 0, result.stdout[-3000:]


MISPLACED = {
    "mirrorspec/stray.py": '"""A module nobody placed."""\n',
    "mirrorspec/spark/loose.py": '"""A spark module in no wing."""\n',
    "mirrorspec/landing/sneaky.py": "from mirrorspec.spark.platform import session  # noqa\n",
    "mirrorspec/landing/heavy.py": "import pyspark  # noqa\nimport rich  # noqa\n",
    "mirrorspec/sources/loop_a.py": "from mirrorspec.sources import loop_b  # noqa\n",
    "mirrorspec/sources/loop_b.py": "from mirrorspec.sources import loop_a  # noqa\n",
}


def test_each_misplaced_module_breaks_its_contract(tmp_path):
    result = _lint(tmp_path, MISPLACED)
    assert result.returncode != 0
    out = result.stdout
    for contract in ("The floors of mirrorspec (every module placed)",
                     "The wings of mirrorspec.spark (every module placed)",
                     "Only the project context and command modules cross the JVM line (lazily)",
                     "The JVM line: only mirrorspec.spark imports pyspark or delta",
                     "Only mirrorspec.base.console imports rich",
                     "No import cycle between siblings, at any depth"):
        assert f"{contract} BROKEN" in out, contract
    assert "mirrorspec.landing.sneaky -> mirrorspec.spark.platform.session" in out
    assert "Command modules are independent (a new one must be listed) KEPT" in out
