"""docs/onelake.md's CI line over serve's conformance reports fails on a finding in any item's
report, with or without `--root`, and when there is no report at all; it passes only when every
report has no error. The reports are written by serve's own `Conformance`."""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from mirrorspec.serve.conformance import Conformance

REPO = Path(__file__).resolve().parents[3]


def recipe() -> str:
    """The jq line the page gives, checked to be the same in its CI workflow."""
    page = (REPO / "docs" / "onelake.md").read_text(encoding="utf-8")
    section = page[page.index("A CI job fails on findings"):]
    line = re.search(r"```bash\n(jq [^\n]+)\n```", section).group(1)
    workflow = re.findall(r"- run: (jq [^\n#]+?)\s*#", page)
    assert workflow == [line], "the CI recipe and the conformance section disagree"
    return line


def report(path: Path, errors: int = 0, warnings: int = 0) -> None:
    """A report as serve writes it, with `errors` error findings and `warnings` warnings."""
    landing = path.parent / f"lz-{uuid.uuid4().hex[:6]}"
    landing.mkdir()
    conformance = Conformance(landing, path, lambda *_a, **_k: None,
                              item={"id": str(uuid.uuid4()), "displayName": "db"})
    for _ in range(errors):
        conformance.add("zero-byte-visible", "error", "db/Files/LandingZone/t/1.parquet", "…")
    for _ in range(warnings):
        conformance.add("sequence-gap", "warning", "db/Files/LandingZone/t/3.parquet", "…")
    conformance.close()


def run_recipe(folder: Path, nullglob: bool = False) -> int:
    script = ("shopt -s nullglob; " if nullglob else "") + recipe()
    return subprocess.run(["bash", "-c", script], cwd=folder, stdin=subprocess.DEVNULL,
                          capture_output=True).returncode


@pytest.fixture(autouse=True)
def _jq():
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (apt-get install jq)")


def test_one_item(tmp_path):
    report(tmp_path / "conformance.json", warnings=2)
    assert run_recipe(tmp_path) == 0
    report(tmp_path / "conformance.json", errors=1)
    assert run_recipe(tmp_path) != 0


def test_root_an_item_created_through_v1_reports_beside_the_start_item(tmp_path):
    report(tmp_path / "conformance.json")  # the start item: no traffic, no finding
    report(tmp_path / f"conformance.{uuid.uuid4()}.json")
    assert run_recipe(tmp_path) == 0
    report(tmp_path / f"conformance.{uuid.uuid4()}.json", errors=1)
    assert run_recipe(tmp_path) != 0
    # the line the page gave before: it read the start item's report only and passed
    old = subprocess.run(["bash", "-c", "jq -e '.errors == 0' conformance.json"], cwd=tmp_path,
                         capture_output=True)
    assert old.returncode == 0


@pytest.mark.parametrize("nullglob", [False, True])
def test_no_report_at_all_fails(tmp_path, nullglob):
    assert run_recipe(tmp_path, nullglob) != 0
