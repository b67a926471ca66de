"""Running the CLI in a subprocess whose import system refuses pyspark, py4j and delta."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BLOCK_PYSPARK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('pyspark', 'py4j', 'delta'):
            raise ImportError(f'{name} is blocked in this test')
        return None
sys.meta_path.insert(0, _Block())
from mirrorspec.cli import main
sys.argv = ['mirrorspec'] + sys.argv[1:]
try:
    main()
finally:
    loaded = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')]
    assert not loaded, loaded
"""


def run_without_jvm(*args: str, cwd: str | Path, log_format: str = "json"
                    ) -> subprocess.CompletedProcess:
    """`mirrorspec --log-format json ARGS` with pyspark/py4j/delta imports refused."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MIRRORSPEC_LOG_FORMAT": log_format}
    return subprocess.run([sys.executable, "-c", BLOCK_PYSPARK, *args], capture_output=True,
                          text=True, cwd=cwd, env=env)
