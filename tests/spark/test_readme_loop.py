"""The README's loop, run as written (bash -e) in a folder outside the repository: `init` gives a
project whose sample feeds `run` publishes and mirrors, and every command of the loop exits 0."""

from __future__ import annotations

import pytest

import os
import re
import subprocess
import sys
from pathlib import Path

pytestmark = pytest.mark.extra  # a slow end-to-end extra: `make test-extras`

REPO = Path(__file__).resolve().parents[2]


def readme_loop() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## The loop"):]
    return re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_loop_runs_verbatim_outside_the_repository(tmp_path):
    script = readme_loop()
    assert "mirrorspec init shop" in script and "git init" in script
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # `mirrorspec` on PATH, as `source .venv/bin/activate` would put it (this tree's code)
    wrapper = bin_dir / "mirrorspec"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -m mirrorspec \"$@\"\n")
    wrapper.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=str(REPO), EDITOR="true", GIT_AUTHOR_NAME="Test",
               GIT_AUTHOR_EMAIL="test@example.com", GIT_COMMITTER_NAME="Test",
               GIT_COMMITTER_EMAIL="test@example.com", MIRRORSPEC_LOG_DIR=str(tmp_path),
               COLUMNS="200")
    done = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    assert "2 of 2 OK" in out or out.count(" OK ") >= 2, out
    assert "Ada Lovelace" not in out  # show printed orders, not customers
    assert re.search(r"1001\s+1\s+1\s+notebook", out), out  # a row of sales.orders
    assert "history of sales.orders" in out
    assert "FAIL=0" in out and "ERROR=0" in out
    assert (work / "shop" / "warehouse" / "sales" / "orders" / "_delta_log").is_dir()
