"""Lint benchmark: a landing zone of Parquet files, linted by footers and marker/key columns.

    python bench/lint_bench.py [--mib 64] [--gib] [--tables 4] [--json]

Writes `--mib` MiB of Parquet (wide rows: a key, the marker and payload columns; `--gib` makes it
1 GiB) into a temporary landing zone, then prints the lint time, the MiB/s it reaches, and the
same figures for a baseline in the same process: reading the files in full with pyarrow (what a
linter that reads rows would cost). The default size runs in seconds on a small machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mirrorspec.landing.lint import lint_landing_zone

ROWS_PER_FILE = 100_000
PAYLOAD_COLUMNS = 8


def write_zone(root: str, total_bytes: int, tables: int) -> tuple[int, int]:
    """Write files until `total_bytes` of Parquet; returns (files, bytes) written."""
    rng = np.random.default_rng(7)
    written = files = 0
    sequence = {t: 0 for t in range(tables)}
    while written < total_bytes:
        table = files % tables
        folder = os.path.join(root, f"t{table}")
        if sequence[table] == 0:
            os.makedirs(folder)
            with open(os.path.join(folder, "_metadata.json"), "w") as handle:
                json.dump({"keyColumns": ["id"]}, handle)
        sequence[table] += 1
        start = files * ROWS_PER_FILE
        columns = {"id": pa.array(np.arange(start, start + ROWS_PER_FILE, dtype=np.int64))}
        for n in range(PAYLOAD_COLUMNS):  # half numbers, half short texts
            values = rng.random(ROWS_PER_FILE)
            columns[f"c{n}"] = pa.array(values) if n % 2 else pa.array(values.astype(str))
        columns["__rowMarker__"] = pa.array(rng.choice([0, 1, 4], ROWS_PER_FILE).astype(np.int32))
        path = os.path.join(folder, f"{sequence[table]:020d}.parquet")
        pq.write_table(pa.table(columns), path, compression="snappy")
        written += os.path.getsize(path)
        files += 1
    return files, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=64.0, help="MiB of Parquet to lint")
    parser.add_argument("--gib", action="store_true", help="1 GiB of Parquet (overrides --mib)")
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    args = parser.parse_args()
    size = (1 << 30) if args.gib else int(args.mib * (1 << 20))
    with tempfile.TemporaryDirectory(prefix="lint-bench-") as root:
        files, written = write_zone(root, size, args.tables)
        mib = written / (1 << 20)
        started = time.perf_counter()
        result = lint_landing_zone(root)
        lint_seconds = time.perf_counter() - started
        assert not result.all_findings(), result.all_findings()[:3]
        started = time.perf_counter()
        for folder, _, names in os.walk(root):
            for name in names:
                if name.endswith(".parquet"):
                    pq.read_table(os.path.join(folder, name))
        full_seconds = time.perf_counter() - started
    figures = {"files": files, "mib": round(mib, 1), "lint_seconds": round(lint_seconds, 3),
               "lint_mib_per_s": round(mib / lint_seconds, 1),
               "full_read_seconds": round(full_seconds, 3),
               "speedup_vs_full_read": round(full_seconds / lint_seconds, 2)}
    print(f"lint: {files} files, {mib:.1f} MiB of Parquet in {lint_seconds:.2f} s "
          f"({figures['lint_mib_per_s']} MiB/s)")
    print(f"baseline (pyarrow reads every column): {full_seconds:.2f} s; lint is "
          f"{figures['speedup_vs_full_read']}x faster")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
