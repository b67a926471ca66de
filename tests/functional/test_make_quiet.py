"""`make` installs mirrorspec editable with `pip install -q -e .`; setuptools must print no
warning block there (its "Editable installation" BuildBackendWarning, which -q doesn't hide):
pyproject.toml's `package-dir = {"" = "."}` makes the install a plain .pth file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.extra  # a slow end-to-end extra: `make test-extras`

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_editable_install_prints_nothing(tmp_path):
    # --ignore-installed: never uninstall the mirrorspec this venv runs (pip would, for --prefix)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed",
                           "--prefix", str(tmp_path / "prefix"), "-e", str(REPO)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "Warning" not in output and "!!" not in output, output
    pth = list((tmp_path / "prefix").rglob("__editable__.mirrorspec-*.pth"))
    assert pth and pth[0].read_text().strip() == str(REPO)
