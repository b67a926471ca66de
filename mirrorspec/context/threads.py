"""How many tables a command processes at once: the one rule for `run`, `publish`, `build`,
`mirror` and the Python API (`Project.run`, `mirror_landing_zone`)."""

from __future__ import annotations

import os

DEFAULT_THREADS = 4
"""Data tests run at once (`test --threads`, `Project.test(threads=…)`)."""


def default_table_threads() -> int:
    """Tables mirrored at once when neither `--threads` nor the profile output's `threads`
    says: twice the CPU cores, 2 to 8. A small table's pass waits on the driver's planning
    about half its time, so a second table per core keeps the cores busy
    (`bench/tables_bench.py --threads 2,4` compares)."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def resolve_table_threads(given: int | None, profile: int | None) -> int:
    """`--threads` (or the API's `threads=`) when given, else the profile output's `threads`,
    else the default."""
    return given or profile or default_table_threads()
