"""Compile benchmark: a generated 1,000-table project, compile time vs. plain YAML loading.

    python bench/compile_bench.py [--tables 1000] [--scale 1] [--repeat 3] [--json]

Prints the best-of-N wall time of `compile_project` (load, render, validate, model, plan, write)
and of loading the same YAML files with `yaml.CSafeLoader`, and their ratio. Targets: compile
under 1 s and a ratio under 5 for 1,000 tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mirrorspec.compile import compile_project

TABLES_PER_FILE = 10
TYPES = ["Int64", "String", "Double", "DateTime", "Boolean", "Int32"]


def generate(root: Path, tables: int) -> list[Path]:
    """Write a project with `tables` tables (10 per file, 5 schemas, mixed formats, tests)."""
    (root / "tables").mkdir(parents=True)
    (root / "mirrorspec_project.yml").write_text(
        "name: bench\nversion: '1'\nvars:\n  env: bench\n"
        "defaults:\n  tags: [bench]\npartner:\n  name: bench\n  source_type: SQL\n")
    files = [root / "mirrorspec_project.yml"]
    for start in range(0, tables, TABLES_PER_FILE):
        lines = ["tables:"]
        for n in range(start, min(start + TABLES_PER_FILE, tables)):
            fmt = "delimited_text" if n % 3 == 0 else "parquet"
            lines += [
                f"  - name: table_{n:05d}",
                f"    schema: schema_{n % 5}",
                f"    description: \"Table {n} of the {{{{ var('env') }}}} project\"",
                "    key_columns: [id, part]",
                f"    upsert_default: {'true' if n % 2 else 'false'}",
                f"    format: {fmt}",
            ]
            if fmt == "delimited_text":
                lines += ["    delimited:", "      extension: tsv", '      column_separator: "\\t"',
                          "      null_value: N/A"]
            lines.append("    columns:")
            lines += ["      - {name: id, type: Int64, nullable: false}",
                      "      - {name: part, type: Int32, nullable: false}"]
            for c in range(6):
                lines.append(f"      - {{name: col_{c}, type: {TYPES[c % len(TYPES)]}, "
                             f"description: column {c}}}")
            lines += ["    tests:", "      - unique", "      - not_null: {columns: [col_0]}"]
        path = root / "tables" / f"tables_{start // TABLES_PER_FILE:04d}.yml"
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
    return files


def best_of(repeat: int, func) -> tuple[float, float]:
    """Best wall time and best CPU time (process_time: robust on a busy machine) of `repeat` runs."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        func()
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
    return wall, cpu


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies --tables")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    tables = max(1, int(args.tables * args.scale))
    with tempfile.TemporaryDirectory(prefix="mirrorspec-compile-bench-") as tmp:
        root = Path(tmp) / "bench"
        files = generate(root, tables)
        size = sum(f.stat().st_size for f in files)

        def load_only():
            for f in files:
                with open(f, encoding="utf-8") as handle:
                    yaml.load(handle, Loader=yaml.CSafeLoader)

        def compile_once():
            result = compile_project(root, profiles_dir=None)
            assert len(result.plan.tables) == tables

        compile_once()  # warm-up: imports, schema validators, first write of target/
        load_s, load_cpu = best_of(args.repeat, load_only)
        compile_s, compile_cpu = best_of(args.repeat, compile_once)
    figures = {"bench": "compile", "tables": tables, "yaml_files": len(files), "yaml_bytes": size,
               "compile_s": round(compile_s, 4), "csafeloader_s": round(load_s, 4),
               "ratio": round(compile_s / load_s, 2),
               "compile_cpu_s": round(compile_cpu, 4), "csafeloader_cpu_s": round(load_cpu, 4),
               "cpu_ratio": round(compile_cpu / load_cpu, 2), "target_s": 1.0, "target_ratio": 5.0}
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"compile bench: {tables} tables in {len(files)} YAML files ({size / 1024:.0f} KiB), "
              f"best of {args.repeat}")
        print("                                                   wall ms    CPU ms")
        print(f"  compile (load+render+validate+model+plan+write): {compile_s * 1000:8.1f}  "
              f"{compile_cpu * 1000:8.1f}")
        print(f"  yaml.CSafeLoader load only:                       {load_s * 1000:8.1f}  "
              f"{load_cpu * 1000:8.1f}")
        print(f"  ratio:                                            {figures['ratio']:8.2f}  "
              f"{figures['cpu_ratio']:8.2f}   (targets: compile < 1 s, ratio < 5)")
    return figures


if __name__ == "__main__":
    main()
