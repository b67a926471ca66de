"""Run every benchmark and print ONE table of figures against the targets of docs/performance.md (`make bench`).

    .venv/bin/python bench/run_all.py            # full sizes (1M changes, 10M rows: hours on 2 cores)
    .venv/bin/python bench/run_all.py --quick    # small sizes, a few minutes on an idle machine
    .venv/bin/python bench/run_all.py --only publish,latency
    .venv/bin/python bench/run_all.py --only cold          # the whole-command table (cold_bench.py)

Each bench runs as its own subprocess (its own JVM, so peak memory is its own) one after
another (they are CPU-heavy; never in parallel). Logs and a `figures.json` go to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_ROOT, event_log_conf, fmt_bytes, machine, print_table, stage_profile

BENCH = Path(__file__).resolve().parent

# name → (script, quick args, full args)
SUITE: dict[str, tuple[str, list[str], list[str]]] = {
    "compile": ("compile_bench.py", ["--json", "--repeat", "3"], ["--json", "--repeat", "5"]),
    "mirror": ("mirror_bench.py", ["--scale", "0.02", "--files", "20", "--baseline-files", "5",
                                   "--floor"],
               ["--scale", "1.0", "--floor"]),
    "publish": ("publish_bench.py", ["--json", "--scale", "0.05"], ["--json", "--scale", "1.0"]),
    "e2e": ("e2e_bench.py", ["--json", "--scale", "0.05"], ["--json", "--scale", "1.0"]),
    "scaling": ("scaling_bench.py", ["--json", "--scale", "0.005", "--files", "20"],
                ["--json", "--scale", "0.1"]),
    "batch": ("batch_bench.py", ["--json", "--scale", "0.005", "--skip-whole", "--warm-passes", "3"],
              ["--json", "--scale", "1.0"]),
    "latency": ("latency_bench.py", ["--json", "--files", "15"], ["--json", "--files", "50"]),
    "latency-cadence": ("latency_bench.py", ["--json", "--files", "8", "--every", "3"],
                        ["--json", "--files", "50", "--every", "3"]),
    "read": ("read_bench.py", ["--json", "--scale", "0.05", "--repeat", "1"],
             ["--json", "--scale", "1.0"]),
    "cold": ("cold_bench.py", ["--json", "--scale", "0.02"],
             ["--json", "--scale", "1.0", "--rounds", "3"]),
}
COLUMNS = ["stage", "workload", "time", "throughput", "peak RSS", "target", "met"]


def run_bench(name: str, args: list[str], out: Path, profile: bool = False
              ) -> tuple[str, float, int]:
    """Run one bench script; its stdout+stderr go to OUT/<name>.log. Returns (stdout, s, rc).

    With `profile`, the bench's Spark driver writes an event log to OUT/<name>-events."""
    script, started = BENCH / SUITE[name][0], time.perf_counter()
    env = dict(os.environ)
    if profile:
        env["PYSPARK_SUBMIT_ARGS"] = event_log_conf(out / f"{name}-events")
    result = subprocess.run([sys.executable, str(script), *args], cwd=str(REPO_ROOT),
                            capture_output=True, text=True, env=env)
    (out / f"{name}.log").write_text(result.stdout + "\n--- stderr ---\n" + result.stderr,
                                     encoding="utf-8")
    return result.stdout, time.perf_counter() - started, result.returncode


def last_json(stdout: str) -> dict | None:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def yes_no(ok: bool | None) -> str:
    return "?" if ok is None else ("yes" if ok else "NO")


# --- one table row (or more) per bench ----------------------------------------------------------

def rows_compile(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    return [["compile", f"{f['tables']:,} tables ({f['yaml_files']} YAML files)",
             f"{f['compile_s']:.3f} s (CPU {f.get('compile_cpu_s', 0):.3f} s)",
             f"{f['ratio']}× YAML-only load", "-", "< 1 s",
             yes_no(f["compile_s"] < 1.0)]]


_MIRROR = {
    "size": re.compile(r"scale ([\d.]+) — ([\d,]+) rows, ([\d,]+) changes .* in (\d+) Parquet"),
    "engine": re.compile(r"engine pass: ([\d.]+) s for (\d+) files, ([\d,]+) changes/s, "
                         r"peak RSS \(Python \+ JVM\) ([\d.]+ \w+)"),
    "per_file": re.compile(r"\(a\) one MERGE per file: ([\d.]+) s(.*?)→ engine is ([\d.]+)× faster"),
    "deltalake": re.compile(r"\(b\) deltalake.*?: ([\d.]+) s.*?→ engine is ([\d.]+)× "
                            r"(faster|slower)", re.IGNORECASE),
    "floor": re.compile(r"\(c\) Spark floor .*?: ([\d.]+) s; the engine pass is ([\d.]+)× the "
                        r"floor"),
}


def rows_mirror(stdout: str) -> list[list]:
    found = {k: p.search(stdout) for k, p in _MIRROR.items()}
    size, engine = found["size"], found["engine"]
    if not engine:
        return []
    workload = (f"{size.group(3)} changes, {size.group(4)} files → {size.group(2)}-row table"
                if size else "see mirror.log")
    rows = [["mirror", workload, f"{float(engine.group(1)):.1f} s",
             f"{engine.group(3)} changes/s", engine.group(4), "-", "-"]]
    if found["per_file"]:
        m = found["per_file"]
        extrapolated = " (extrapolated)" if "EXTRAPOLATED" in m.group(2) else ""
        rows.append(["  vs one MERGE per file", f"same changes{extrapolated}",
                     f"{float(m.group(1)):.1f} s", f"engine {m.group(3)}× faster", "-",
                     "≥ 10×", yes_no(float(m.group(3)) >= 10)])
    if found["deltalake"]:
        m = found["deltalake"]
        verdict = m.group(3).lower()  # the bench prints "SLOWER" in capitals
        rows.append(["  vs deltalake (delta-rs)", "same changes, one MERGE",
                     f"{float(m.group(1)):.1f} s", f"engine {m.group(2)}× {verdict}", "-",
                     "engine faster", yes_no(verdict == "faster")])
    if found["floor"]:
        m = found["floor"]
        rows.append(["  Spark floor (no Delta)", "read, last per key, write rows, key join; warm",
                     f"{float(m.group(1)):.1f} s", f"engine pass {m.group(2)}× the floor", "-",
                     "-", "-"])
    return rows


def rows_publish(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    names = {"qlik": "Qlik Replicate messages", "arcion": "Arcion realtime CSV rows"}
    rows = []
    for feed, label in names.items():
        if feed not in f:
            continue
        p, arrow = f[feed], f[feed]["pyarrow"]
        for run, what in (("first", "first publish of the session"), ("warm", "warm")):
            r = p[run]
            rows.append([f"publish {feed} ({what})", f"{f['changes_per_feed']:,} {label}",
                         f"{r['seconds']:.1f} s (CPU {r['cpu_s']:.1f} s)",
                         f"{r['changes_per_s']:,.0f} changes/s", fmt_bytes(r["peak_rss"]),
                         "≥ 100k/s", yes_no(r["changes_per_s"] >= 100_000)])
        rows.append([f"  pyarrow reader + Parquet ({feed})", "same files, parse + write",
                     f"{arrow['seconds']:.1f} s (CPU {arrow['cpu_s']:.1f} s)",
                     f"warm publish {p['ratio_to_pyarrow']['warm_wall']}× pyarrow", "-",
                     "≤ 3×", yes_no(p["ratio_to_pyarrow"]["warm_wall"] <= 3)])
    return rows


def rows_e2e(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    total = f["changes_per_feed"] * len(f["feeds"])
    return [["end to end", f"{total:,} changes ({' + '.join(f['feeds'])}) feed → Delta",
             f"{f['seconds']:.1f} s (CPU {f.get('cpu_s', 0):.1f} s)",
             f"{f['changes_per_s']:,.0f} changes/s", f["peak_rss"], "correct rows",
             yes_no(f["correct"])]]


def rows_scaling(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    points = f["points"]
    times = " / ".join(f"{p['pass_s']:.1f}" for p in points)
    sizes = "/".join(f"{p['factor']}×" for p in points)
    exponent = f.get("cpu_exponent") if f.get("cpu_exponent") is not None else f["exponent"]
    ok = exponent is not None and exponent <= 1.15
    return [["scaling", f"{sizes} of {points[0]['changes']:,} changes", f"{times} s",
             f"exponent wall {f['exponent']}, CPU {f.get('cpu_exponent')}", "-",
             "linear (exponent ≤ 1.15)", yes_no(ok)]]


def rows_latency(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    cadence = f"one every {f['every_s']:g} s" if f.get("every_s") else "back to back"
    met = f["p50_s"] <= 2 and f["p95_s"] <= 4 and f["correct"]
    return [["watch latency", f"{f['files']} files of {f['rows_per_file']} rows ({cadence}), "
                              f"--watch {f['watch_interval_s']}",
             f"p50 {f['p50_s']} s, p95 {f['p95_s']} s", f"max {f['max_s']} s", "-",
             "p50 ≤ 2 s, p95 ≤ 4 s", yes_no(met)]]


def _cpu(case: dict) -> str:
    return f"{case['wall_s']:.1f} s (CPU {case['cpu_s']:.1f} s)"


def rows_batch(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    tiny, rss = f["tiny"], lambda case: f"{case['peak_rss'] / 2**30:.2f} GiB"
    rows = [["tiny batch", f"{tiny['changes']:,} changes → {tiny['rows']:,} rows: `mirror` vs "
                           "bare Spark+Delta start", f"{_cpu(tiny['mirror'])} vs "
                           f"{_cpu(tiny['bare'])}",
             f"{tiny['ratio_wall']}× wall, {tiny['ratio_cpu']}× CPU", rss(tiny["mirror"]),
             "≤ 1.2×", yes_no(tiny["ratio_wall"] <= 1.2)]]
    for name in ("small", "big"):
        case = f[name]
        rows.append([f"batch → {case['rows']:,} rows", f"{case['changes']:,} changes, warm pass "
                     f"vs delta-rs {_cpu(case['deltalake'])}", _cpu(case["batch"]),
                     f"{case['ratio_wall']}× delta-rs wall, {case['ratio_cpu']}× CPU",
                     rss(case["batch"]), "≤ 2× delta-rs", yes_no(case["ratio_wall"] <= 2)])
    rows.append(["  cost follows the batch", "same batch, 10× the rows",
                 f"{f['size_ratio_wall']}× wall, {f['size_ratio_cpu']}× CPU", "-", "-", "≤ 1.5×",
                 yes_no(f["size_ratio_wall"] <= 1.5)])
    big = f["big"]
    for label, case in (("initial load", big["initial"]),
                        ("  pyarrow + delta-rs", big["initial_deltalake"])):
        written = case["written"]
        rows.append([label, f"{big['rows']:,} rows, one Parquet file → Delta", _cpu(case),
                     f"{written['files']} files, {written['bytes'] / 2**20:.0f} MiB",
                     rss(case), "-", "-"])
    whole = f.get("whole")
    if whole:
        rows.append([f"whole command → {whole['rows']:,} rows",
                     f"{whole['changes']:,} changes: `mirror` − bare start vs delta-rs "
                     f"{_cpu(whole['deltalake'])}", f"{whole['net_s']} s",
                     f"{whole['ratio_wall']}× delta-rs", rss(whole["mirror"]),
                     "≤ 3× delta-rs", yes_no(whole["ratio_wall"] <= 3)])
    warm = f.get("warm")
    if warm:
        rows.append([f"warm pass → {warm['rows']:,} rows",
                     f"{warm['changes']:,} changes, snapshot warm, vs a plain Delta MERGE "
                     f"{warm['plain_median_s']} s (medians of {warm['passes']})",
                     f"{warm['engine_median_s']} s", f"{warm['ratio_wall']}× the MERGE", "-",
                     "≤ 1.5 s", yes_no(warm["engine_median_s"] <= 1.5)])
    return rows


def rows_read(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    rows = []
    for name, c in f["commands"].items():
        fast, slow = c["delta_rs_s"], c.get("spark_s")
        rows.append([f"read: {name}", f"cold process, {f['rows']:,}-row table (DVs)",
                     f"{fast:.2f} s", f"Spark path {slow:.1f} s ({slow / fast:.0f}×)" if slow
                     else "never started Spark", "-", "< 2 s", yes_no(fast < 2)])
    return rows


def rows_cold(stdout: str) -> list[list]:
    f = last_json(stdout)
    if not f:
        return []
    from cold_bench import CASES, TARGETS, met

    rows = []
    for name in CASES:
        case = f.get(name)
        if not case:
            continue
        command = case.get("mirror") or case.get("publish")
        spark = command.get("spark") or {}
        rows.append([f"cold: {name}", f"{case['changes']:,} changes, whole command "
                     f"({spark.get('queries')} queries, {spark.get('jobs')} jobs)",
                     f"{case['figure_s']:.1f} s vs {case['reference_name']} "
                     f"{case['reference']['wall_s']:.1f} s", f"{case['ratio']}×",
                     fmt_bytes(command["peak_rss"]), f"≤ {TARGETS[name]}×",
                     {"yes": "yes", "no": "NO"}.get(met(case, name), "?")])
    return rows


ROWS = {"compile": rows_compile, "cold": rows_cold, "mirror": rows_mirror, "publish": rows_publish,
        "e2e": rows_e2e, "scaling": rows_scaling, "batch": rows_batch, "latency": rows_latency,
        "latency-cadence": rows_latency,
        "read": rows_read}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (minutes, not hours)")
    parser.add_argument("--only", default=None, help=f"comma list of {', '.join(SUITE)}")
    parser.add_argument("--out", default=None, help="folder for logs and figures.json")
    parser.add_argument("--profile", action="store_true",
                        help="Spark event logs per bench, and its slowest stages after the table")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",")] if args.only else list(SUITE)
    unknown = [n for n in names if n not in SUITE]
    if unknown:
        parser.error(f"unknown bench {', '.join(unknown)}; choose from {', '.join(SUITE)}")
    out = Path(args.out or tempfile.mkdtemp(prefix="mirrorspec-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    info = machine()
    print(f"mirrorspec benchmarks ({'quick' if args.quick else 'full'} sizes) on {info.get('cpus')}"
          f" CPUs ({info.get('cpu_model', '?')}), {info.get('memory', '?')} RAM, load average "
          f"{info.get('load_average', 0):.1f}; logs in {out}", flush=True)
    table, figures, failures = [], {"machine": info, "quick": args.quick}, []
    for name in names:
        script, quick, full = SUITE[name]
        print(f"  running {script} {' '.join(quick if args.quick else full)} …", flush=True)
        stdout, seconds, code = run_bench(name, quick if args.quick else full, out, args.profile)
        rows = ROWS[name](stdout) if code == 0 else []
        figures[name] = {"exit_code": code, "wall_s": round(seconds, 1),
                         "figures": last_json(stdout), "rows": rows}
        if args.profile:
            figures[name]["slowest_stages"] = stage_profile(out / f"{name}-events")
        if not rows:
            failures.append(name)
            rows = [[name, f"FAILED (exit {code}); see {out / (name + '.log')}", "", "", "", "",
                     "NO"]]
        table.extend(rows)
    (out / "figures.json").write_text(json.dumps(figures, indent=2, default=str) + "\n",
                                      encoding="utf-8")
    print()
    print_table(COLUMNS, table)
    if args.profile:
        print("\nslowest Spark stages per bench (wall s, summed task s, tasks):")
        for name in names:
            for stage in figures[name].get("slowest_stages") or []:
                print(f"  {name:8} stage {stage['stage']:>4}  {stage['wall_s']:8.2f} s  "
                      f"{stage['task_s']:8.2f} s  {stage['tasks']:>5}  {stage['name'][:70]}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
