"""`make`'s long steps are never silent: each says what it does and how long it may take, then
prints a line every N seconds while it runs (scripts/step.sh), and the exit code is the step's."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEP = REPO / "scripts" / "step.sh"


def test_a_long_step_says_what_it_does_then_shows_it_is_still_running(tmp_path):
    go = tmp_path / "go"
    # the step waits for `go`, which this test creates only once the step said it is running
    process = subprocess.Popen(
        ["bash", str(STEP), "waiting for go (minutes)", "bash", "-c",
         f"while [ ! -e {go} ]; do sleep 0.05; done; echo finished"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "MIRRORSPEC_PROGRESS_EVERY": "1"})
    assert process.stdout is not None
    lines = [process.stdout.readline().rstrip("\n")]
    assert lines == ["==> waiting for go (minutes)"]
    lines.append(process.stdout.readline().rstrip("\n"))
    assert re.fullmatch(r"    … still running \(\d+s\): waiting for go \(minutes\)", lines[-1])
    go.touch()
    rest, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    assert "finished" in rest and re.search(r"    done in \d+s$", rest.strip())


def test_a_failing_step_fails_make_with_its_exit_code():
    done = subprocess.run(["bash", str(STEP), "a broken step", "bash", "-c", "exit 3"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "failed (exit 3)" in done.stderr


def test_every_install_step_of_make_goes_through_step_sh():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("$(STAMP): pyproject.toml\n", 1)[1].split("\n\n", 1)[0]
    commands = [line.strip() for line in recipe.splitlines()
                if line.startswith("\t") and not line.startswith("\t  ")]
    assert commands[-1] == "touch $(STAMP)"
    assert commands[:-1] and all(c.startswith("$(STEP) \"") for c in commands[:-1]), commands
    assert "cds_training" in recipe and "pip install -q -e" in recipe
