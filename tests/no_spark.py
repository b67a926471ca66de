"""Run the mirrorspec CLI in a subprocess whose import system refuses pyspark, py4j and delta.

The one copy of the import blocker: the compile path (init, validate, compile, diff, docs) must
work where those packages cannot be imported, and must not import them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCKED = ("pyspark", "py4j", "delta")

BLOCK_PYSPARK = f"""
import sys
BLOCKED = {BLOCKED!r}
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in BLOCKED:
            raise ImportError(f'{{name}} is blocked in this test')
        return None
sys.meta_path.insert(0, _Block())
from mirrorspec.cli import main
sys.argv = ['mirrorspec'] + sys.argv[1:]
try:
    main()
finally:
    loaded = [m for m in sys.modules if m.split('.')[0] in BLOCKED]
    assert not loaded, loaded
"""


def run_without_spark(args: list[str], cwd: str | os.PathLike[str] | None = None
                      ) -> subprocess.CompletedProcess[str]:
    """`mirrorspec ARGS` in this interpreter with pyspark, py4j and delta unimportable; the
    subprocess imports this worktree's mirrorspec."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-c", BLOCK_PYSPARK, *args], capture_output=True,
                          text=True, cwd=cwd, env=env)


def skip_unless(condition: bool, reason: str) -> None:
    """Skip when `condition` is false, except in CI (`CI` set): there a missing prerequisite
    fails the test, so a line the suite holds can't silently stop being checked."""
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: this test must not be skipped)")
    pytest.skip(reason)
