"""The benches' CPU seconds of a process tree count each process once: a forked child that the
sampler saw is not counted again through its parent's reaped-children time."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from _common import run_tree

_BURN = 0.4  # CPU seconds each of three forked children uses

_CHILDREN = f"""
import os, time
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        start = time.process_time()
        while time.process_time() - start < {_BURN}:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_forked_children_are_counted_once():
    figures, _cpu, _output = run_tree([sys.executable, "-c", _CHILDREN], interval=0.02)
    # 1.2 s of children plus the interpreter's start; counted twice it would be 2.4 s or more
    assert 0.95 * 3 * _BURN <= figures["cpu_s"] <= 1.5 * 3 * _BURN
