"""What `mirrorspec maintain` costs on small tables: whole commands, cold JVMs.

A project of N small tables (3 rows each after a delete, so each carries a deletion vector) is
mirrored with deletion vectors on. Then, each as a whole `mirrorspec maintain` command beside a
bare start of mirrorspec's session that counts one table:

  (a) switching the tables off (`deletion_vectors: false`): DROP FEATURE, OPTIMIZE, VACUUM per
      table, `--threads 1` and the default `--threads`;
  (b) the everyday run on tables without the feature: purge, OPTIMIZE, VACUUM.

It prints wall and CPU seconds of each process tree and what each command costs beyond the bare
start, in all and per table. Delta's DROP FEATURE makes seven commits and four checkpoints (it
unsets the property, purges, writes tombstones for the vectors, then three checkpointed empty
commits before the protocol downgrade); each is a handful of small Spark jobs, so the figure
follows the number of tables, not their size. Read wall figures only from an idle machine.

    .venv/bin/python bench/maintain_bench.py                 # 4 tables: ~3 minutes
    .venv/bin/python bench/maintain_bench.py --tables 10
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit, machine, print_table
from batch_bench import SESSION_COUNT, run_process

CLI = [sys.executable, "-m", "mirrorspec"]


def _project(root: Path, tables: int, deletion_vectors: bool) -> None:
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "mirrorspec_project.yml").write_text('name: bench\nversion: "1"\n', encoding="utf-8")
    (root / "profiles.yml").write_text(
        "bench:\n  target: dev\n  outputs:\n    dev:\n      landing_zone: landing\n"
        "      warehouse: warehouse\n      spark: {master: 'local[2]'}\n", encoding="utf-8")
    lines = ["tables:"]
    for i in range(tables):
        lines.append(f"  - name: t{i}\n    schema: bench\n    key_columns: [id]\n"
                     f"    deletion_vectors: {str(deletion_vectors).lower()}\n"
                     "    columns: [{name: id, type: Int32}, {name: v, type: String}]")
    (root / "tables" / "bench.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _land(root: Path, tables: int, sequence: int) -> None:
    """Four rows (file 1), then a delete of one (file 2: its MERGE leaves a deletion vector)."""
    ids, marker = ([1, 2, 3, 4], 0) if sequence == 1 else ([4], 2)
    for i in range(tables):
        folder = root / "landing" / "bench.schema" / f"t{i}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int32()),
                                 "v": [f"v{k}" for k in ids],
                                 "__rowMarker__": pa.array([marker] * len(ids), pa.int32())}),
                       folder / f"{sequence:020d}.parquet")


def _cli(root: Path, *args: str) -> dict:
    return run_process([*CLI, *args, "--project-dir", str(root)])


def _vectors(root: Path, tables: int) -> int:
    from deltalake import DeltaTable

    return sum(pa.table(DeltaTable(str(root / "warehouse" / "bench" / f"t{i}"))
                        .deletion_vectors()).num_rows for i in range(tables))


def run(tables: int, threads: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="mirrorspec-maintain-bench-"))
    try:
        figures: dict = {"tables": tables, "threads": threads}
        cases = {}
        for label, thread_count in (("switch off, --threads 1", 1),
                                    (f"switch off, --threads {threads}", threads)):
            root = work / f"p{thread_count}"
            _project(root, tables, deletion_vectors=True)
            for sequence in (1, 2):
                _land(root, tables, sequence)
                _cli(root, "run")
            assert _vectors(root, tables) == tables, "each table should carry a deletion vector"
            _project(root, tables, deletion_vectors=False)
            cases[label] = _cli(root, "maintain", "--threads", str(thread_count))
            assert _vectors(root, tables) == 0
        cases[f"no feature, --threads {threads}"] = _cli(work / f"p{threads}", "maintain",
                                                       "--threads", str(threads))
        bare = run_process([sys.executable, "-c", SESSION_COUNT,
                            str(work / f"p{threads}" / "warehouse" / "bench" / "t0")])
        figures["bare"] = {k: bare[k] for k in ("wall_s", "cpu_s")}
        for label, result in cases.items():
            beyond = round(result["wall_s"] - bare["wall_s"], 2)
            figures[label] = {"wall_s": result["wall_s"], "cpu_s": result["cpu_s"],
                              "beyond_start_s": beyond,
                              "beyond_start_per_table_s": round(beyond / tables, 2)}
        return figures
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4, help="the parallel case's --threads")
    parser.add_argument("--scale", type=float, default=1.0, help="unused (run_all passes it)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    figures = run(args.tables, args.threads)
    figures["machine"] = machine()
    rows = [["bare start (mirrorspec's session, count a table)", figures["bare"]["wall_s"],
             figures["bare"]["cpu_s"], "", ""]]
    for label, value in figures.items():
        if isinstance(value, dict) and "beyond_start_s" in value:
            rows.append([f"maintain: {label}", value["wall_s"], value["cpu_s"],
                         value["beyond_start_s"], value["beyond_start_per_table_s"]])
    print(f"{args.tables} tables of 3 rows, load average {figures['machine'].get('load_average')}")
    print_table(["case", "wall s", "CPU s", "beyond the start s", "per table s"], rows)
    print(f"(bench took {time.perf_counter() - started:.0f} s)")
    emit(figures, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
