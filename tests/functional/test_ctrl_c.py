"""Ctrl-C at any point of `mirrorspec run` exits 130 with one line: before Spark, while the JVM
starts, right after it started, and inside a pass (a table paused after listing its folder).

Each case runs the console script in its own process group (a terminal's Ctrl-C reaches the
whole group) on the `init` scaffold, and sends SIGINT only once the process printed a given
line or reached a named fault point (`mirrorspec/base/faults.py`): no sleeping on timings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

MIRRORSPEC = str(Path(sys.executable).with_name("mirrorspec"))
INTERRUPTED = "Interrupted (Ctrl-C)"


@pytest.fixture()
def shop(tmp_path) -> Path:
    subprocess.run([MIRRORSPEC, "init", "shop"], cwd=tmp_path, check=True, capture_output=True)
    return tmp_path / "shop"


def interrupt_run(project: Path, tmp_path: Path, line: str | None = None,
                  pause_at: str | None = None) -> tuple[int, list[str]]:
    """Start `mirrorspec run`, SIGINT its process group once it printed `line` (or reached the
    fault point `pause_at`); (exit code, the lines it printed from that moment on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIRRORSPEC_")}
    env.update(MIRRORSPEC_LOG_DIR=str(tmp_path / "logs"), COLUMNS="200")
    if pause_at:
        env.update(MIRRORSPEC_PAUSE_AT=pause_at, MIRRORSPEC_PAUSE_DIR=str(tmp_path))
    process = subprocess.Popen([MIRRORSPEC, "run"], cwd=project, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        assert process.stdout is not None
        seen: list[str] = []
        if line is not None:
            for text in process.stdout:
                seen.append(text.rstrip("\n"))
                if line in text:
                    break
            else:
                pytest.fail(f"never printed {line!r}: {seen}")
        else:
            reached = tmp_path / f"{pause_at}.reached"
            deadline = time.monotonic() + 600
            while not reached.exists():  # the process creates it when it gets there
                assert process.poll() is None, f"ended before {pause_at}"
                assert time.monotonic() < deadline, f"never reached {pause_at}"
                time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)
        rest, _ = process.communicate(timeout=120)
        return process.returncode, [t for t in rest.splitlines() if t.strip()]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def assert_one_line(code: int, after: list[str]) -> None:
    assert code == 130, after
    text = "\n".join(after)
    assert after and after[-1].startswith(INTERRUPTED), text
    assert [t for t in after if INTERRUPTED in t] == [after[-1]], text
    for noise in ("Traceback", "Internal error", "py4j", "Py4J", "Exception"):
        assert noise not in text, text


def test_ctrl_c_before_spark_starts(shop, tmp_path):
    code, after = interrupt_run(shop, tmp_path, pause_at="before_spark_start")
    assert_one_line(code, after)
    assert after == [after[-1]]  # nothing else: no JVM was started


@pytest.mark.spark
def test_ctrl_c_while_spark_starts(shop, tmp_path):
    assert_one_line(*interrupt_run(shop, tmp_path, line="starting Spark"))


@pytest.mark.spark
def test_ctrl_c_right_after_spark_started(shop, tmp_path):
    assert_one_line(*interrupt_run(shop, tmp_path, line="Spark started"))


@pytest.mark.spark
@pytest.mark.extra  # a whole publish before the pause: `make test-extras`
def test_ctrl_c_during_a_pass_ends_at_once(shop, tmp_path):
    """A table is paused inside its mirror step (never released): the run still ends at once,
    not after the tables in progress."""
    code, after = interrupt_run(shop, tmp_path, pause_at="after_listing")
    assert_one_line(code, after)
