"""scripts/demo.sh keeps its work folder (and says where) unless MIRRORSPEC_DEMO_KEEP=0.

The real CLI is replaced by a stub that records its calls, so no JVM starts."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

STUB = """#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
if [ "$1" = compile ]; then
  mkdir -p target
  printf '{"landing_zone": "%s/landing_zone", "warehouse": "%s/warehouse", "tables": [{"unique_id": "sales.customers"}]}' "$PWD" "$PWD" > target/plan.json
fi
"""


def run_demo(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    stub = tmp_path / "mirrorspec"
    stub.write_text(STUB)
    stub.chmod(0o755)
    log = tmp_path / "calls.log"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MIRRORSPEC_DEMO")}
    environ.update(MIRRORSPEC=str(stub), STUB_LOG=str(log), TMPDIR=str(tmp_path), **env)
    done = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh")], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=120)
    return done, log


def test_the_demo_keeps_its_artifacts_and_names_them(tmp_path):
    done, log = run_demo(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = re.search(r"Everything is kept in ([^\s\x1b]+)", done.stdout)
    assert kept, done.stdout
    folder = Path(kept.group(1))
    assert (folder / "target" / "plan.json").exists()
    assert list((folder / "landing_zone").rglob("*.parquet"))  # the landed sample files
    assert "target/docs/index.html" in done.stdout and "MIRRORSPEC_DEMO_KEEP=0" in done.stdout
    calls = log.read_text().splitlines()
    assert calls[0].startswith("compile") and any(c.startswith("docs generate") for c in calls)


def test_demo_keep_0_removes_the_temporary_folder(tmp_path):
    done, _ = run_demo(tmp_path, MIRRORSPEC_DEMO_KEEP="0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is removed" in done.stdout
    assert not list(tmp_path.glob("mirrorspec-demo.*"))


def test_a_piped_demo_log_has_no_ansi_codes(tmp_path):
    done, _log = run_demo(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\n==> " in done.stdout
    assert "\x1b" not in done.stdout + done.stderr
