"""Watch-latency benchmark: file landed → rows visible in the Delta table.

Starts `mirrorspec mirror --watch 0.5` as a subprocess on an empty landing zone, lands a first
file and waits for it (JVM start-up; reported apart), then lands --files small Parquet files one
after another (each written to a temporary `_` name and renamed into place, as a publisher does):
back to back (the next lands as soon as the last is visible), or one every --every seconds as
a producer with a cadence lands them. For each, it polls the table's `_delta_log` until a
commit carries the engine's `txn` for that file's sequence number (the engine stores the
applied sequence as the txn version, in the same commit as the data). Reports p50/p95/max. The Fabric service takes 15–90 s; issue 15's target
is p50 ≤ 2 s, p95 ≤ 4 s.
At the end the table is read back with the `deltalake` package and checked; the watcher is
stopped with SIGTERM and must exit cleanly.

    .venv/bin/python bench/latency_bench.py [--files 50] [--scale 1] [--every 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_ROOT, emit, machine

TABLE = "events"
MARKER = "__rowMarker__"


class DeltaLogWatcher:
    """Reads new `_delta_log/*.json` commits and remembers the highest txn version seen."""

    def __init__(self, table: Path) -> None:
        self.log = table / "_delta_log"
        self.seen: set[str] = set()
        self.version = -1

    def poll(self) -> int:
        try:
            names = sorted(n for n in os.listdir(self.log) if n.endswith(".json"))
        except FileNotFoundError:
            return self.version
        for name in names:
            if name in self.seen:
                continue
            try:
                text = (self.log / name).read_text(encoding="utf-8")
            except OSError:
                continue  # not fully there yet; read it on the next poll
            self.seen.add(name)
            for line in text.splitlines():
                if '"txn"' in line:
                    txn = json.loads(line).get("txn") or {}
                    self.version = max(self.version, int(txn.get("version", -1)))
        return self.version


def land(folder: Path, sequence: int, rows: int, first_id: int) -> float:
    """Write file `sequence` (upserts of `rows` keys) atomically; returns the landing time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(range(first_id, first_id + rows))
    table = pa.table({"id": pa.array(ids, pa.int64()),
                      "payload": pa.array([f"file {sequence} row {i}" for i in ids]),
                      "seq": pa.array([sequence] * rows, pa.int32()),
                      MARKER: pa.array([4] * rows, pa.int32())})
    temp = folder / f"_{sequence:020d}.tmp"
    pq.write_table(table, temp)
    final = folder / f"{sequence:020d}.parquet"
    os.rename(temp, final)
    return time.perf_counter()


def wait_visible(watcher: DeltaLogWatcher, sequence: int, process: subprocess.Popen,
                 timeout: float) -> float:
    """Poll until the txn version reaches `sequence`; returns the time it was seen."""
    deadline = time.perf_counter() + timeout
    while watcher.poll() < sequence:
        if process.poll() is not None:
            raise SystemExit(f"the watcher exited with {process.returncode} while file "
                             f"{sequence} was pending")
        if time.perf_counter() > deadline:
            raise SystemExit(f"file {sequence} not visible after {timeout:.0f} s")
        time.sleep(0.02)
    return time.perf_counter()


def first_id_of(sequence: int, rows: int) -> int:
    """File 1 and every odd file add `rows` new keys; every even file updates the keys of the
    file before it."""
    return (sequence - 1) * rows if sequence % 2 else (sequence - 2) * rows


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--scale", type=float, default=1.0, help="rows per file = 100 × scale")
    parser.add_argument("--watch", type=float, default=0.5, help="the watcher's poll interval")
    parser.add_argument("--every", type=float, default=0.0,
                        help="land a file every SECONDS (a producer's cadence); 0: the next file "
                             "lands as soon as the last is visible (back to back)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=600, help="per file, then give up")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args(argv)
    rows = max(1, int(100 * args.scale))
    work = Path(args.workdir or tempfile.mkdtemp(prefix="mirrorspec-latency-bench-"))
    landing, warehouse = work / "landing", work / "warehouse"
    folder = landing / TABLE
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}\n', encoding="utf-8")
    log = open(work / "watcher.log", "wb")
    env = dict(os.environ, MIRRORSPEC_SPARK_LOG_LEVEL="ERROR")
    process = subprocess.Popen(
        [sys.executable, "-m", "mirrorspec", "mirror", "--landing-zone", str(landing),
         "--warehouse", str(warehouse), "--watch", str(args.watch), "--master", args.master],
        stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO_ROOT), env=env)
    watcher = DeltaLogWatcher(warehouse / "dbo" / TABLE)
    latencies: list[float] = []
    try:
        started = land(folder, 1, rows, first_id_of(1, rows))
        first = wait_visible(watcher, 1, process, args.timeout) - started
        landed = time.perf_counter()
        for sequence in range(2, args.files + 2):
            if args.every:  # a producer's cadence: the next file lands `every` s after the last
                time.sleep(max(0.0, landed + args.every - time.perf_counter()))
            landed = land(folder, sequence, rows, first_id_of(sequence, rows))
            latencies.append(wait_visible(watcher, sequence, process, args.timeout) - landed)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()
    exit_code = process.returncode
    import pyarrow as pa
    from deltalake import DeltaTable

    # scan() applies deletion vectors (to_pyarrow_table() refuses tables that have them)
    data = pa.RecordBatchReader.from_stream(DeltaTable(str(warehouse / "dbo" / TABLE)).scan()
                                            ).read_all()
    expected_ids = set()
    for sequence in range(1, args.files + 2):
        expected_ids.update(range(first_id_of(sequence, rows), first_id_of(sequence, rows) + rows))
    correct = sorted(data.column("id").to_pylist()) == sorted(expected_ids)
    figures = {"bench": "latency", "files": args.files, "rows_per_file": rows,
               "watch_interval_s": args.watch, "every_s": args.every, "first_file_s": round(first, 2),
               "p50_s": round(percentile(latencies, 50), 3),
               "p95_s": round(percentile(latencies, 95), 3),
               "max_s": round(max(latencies), 3), "min_s": round(min(latencies), 3),
               "correct": correct, "watcher_exit_code": exit_code, "target_p50_s": 2.0,
               "target_p95_s": 4.0,
               "machine": machine()}
    if not args.json:
        cadence = f"one every {args.every:g} s" if args.every else "back to back"
        print(f"latency: {args.files} files of {rows} rows ({cadence}), watch {args.watch} s: "
              f"p50 {figures['p50_s']} s, p95 {figures['p95_s']} s, max {figures['max_s']} s "
              f"(first file incl. JVM start {figures['first_file_s']} s); table correct: "
              f"{'yes' if correct else 'NO'}; watcher exit code {exit_code}")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
