"""Running the CLI in a subprocess whose import system refuses pyspark, py4j and delta."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BLOCK_PYSPARK = """
import atexit
import os
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('pyspark', 'py4j', 'delta'):
            raise ImportError(f'{name} is blocked in this test')
        return None
sys.meta_path.insert(0, _Block())
def _none_loaded():  # the CLI ends through os._exit after the exit handlers
    loaded = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')]
    if loaded:
        print(f'loaded: {loaded}', file=sys.stderr, flush=True)
        os._exit(3)
atexit.register(_none_loaded)
from mirrorspec.cli import main
sys.argv = ['mirrorspec'] + sys.argv[1:]
main()
"""


def run_without_jvm(*args: str, cwd: str | Path, log_format: str = "json"
                    ) -> subprocess.CompletedProcess:
    """`mirrorspec --log-format json ARGS` with pyspark/py4j/delta imports refused."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MIRRORSPEC_LOG_FORMAT": log_format}
    return subprocess.run([sys.executable, "-c", BLOCK_PYSPARK, *args], capture_output=True,
                          text=True, cwd=cwd, env=env)


def skip_unless(condition: bool, reason: str) -> None:
    """Skip when `condition` is false, except in CI (`CI` set): there a missing prerequisite
    fails the test, so a line the suite holds can't silently stop being checked."""
    import pytest

    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: this test must not be skipped)")
    pytest.skip(reason)
