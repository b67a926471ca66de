"""pyproject.toml's license metadata is the PEP 639 form setuptools no longer warns about."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_license_is_an_spdx_string_with_its_file():
    doc = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    project = doc["project"]
    assert project["license"] == "Apache-2.0"  # a string, not the deprecated {text = …} table
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))
    for pattern in project["license-files"]:
        matched = list(REPO.glob(pattern))
        assert matched, pattern
        assert "Apache License" in matched[0].read_text(encoding="utf-8")
    # SPDX strings and license-files need setuptools 77+
    requires = doc["build-system"]["requires"]
    assert any(r.replace(" ", "").startswith("setuptools>=7") and
               int(r.split(">=")[1].split(".")[0].split(",")[0]) >= 77 for r in requires)
