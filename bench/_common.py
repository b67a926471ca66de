"""Helpers shared by the benchmarks: timing, peak memory of the process tree, the machine, one
figures table, and the JSON line each bench prints for `bench/run_all.py`.

Every bench script has a `--scale` flag (1.0 = the sizes docs/performance.md names) and `--json`; with
`--json` its LAST stdout line is one JSON object of figures, which run_all collects.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


# --- time -----------------------------------------------------------------------------------

class Timer:
    """Wall seconds of a `with` block (`.seconds` after it ends)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __enter__(self) -> "Timer":
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._start


@contextmanager
def timed() -> Iterator[Timer]:
    with Timer() as timer:
        yield timer


# --- memory ---------------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(c) for c in handle.read().split())
    except OSError:
        pass
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss(pid: int | None = None) -> int:
    """Resident bytes of `pid` (default: this process) and all its descendants (JVM, workers)."""
    total, stack = 0, [pid or os.getpid()]
    while stack:
        current = stack.pop()
        total += _rss(current)
        stack.extend(_children(current))
    return total


class PeakMemory:
    """Samples the process tree's RSS every `interval` s inside the `with` block (`.peak`)."""

    def __init__(self, pid: int | None = None, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "PeakMemory":
        self.peak = tree_rss(self.pid)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, tree_rss(self.pid))

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, tree_rss(self.pid))


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_ticks(pid: int) -> int:
    """utime + stime of `pid` plus the reaped children's (cutime + cstime), in clock ticks."""
    own, reaped = _own_and_reaped_ticks(pid)
    return own + reaped


def _own_and_reaped_ticks(pid: int) -> tuple[int, int]:
    """(utime + stime, cutime + cstime) of `pid` in clock ticks; (0, 0) when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    except (OSError, IndexError, ValueError):
        return 0, 0


def tree_cpu_seconds(pid: int | None = None) -> float:
    """CPU seconds used so far by `pid` (default: this process) and its live descendants."""
    total, stack = 0, [pid or os.getpid()]
    while stack:
        current = stack.pop()
        total += _cpu_ticks(current)
        stack.extend(_children(current))
    return total / _TICKS


class CpuTime:
    """CPU seconds the process tree spends inside the `with` block (`.seconds`): unlike wall
    time, it hardly changes when other work shares the machine."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid
        self.seconds = 0.0
        self._start = 0.0

    def __enter__(self) -> "CpuTime":
        self._start = tree_cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = tree_cpu_seconds(self.pid) - self._start


class TreeCpu(threading.Thread):
    """CPU seconds of a process tree, sampled every 0.1 s: the last figure seen of each process
    (the JVM a PySpark driver starts is not reaped by it, so getrusage misses it).

    `seen[pid]`: the process's own CPU ticks, plus what its reaped children used beyond the
    children that were sampled themselves (a child too short-lived to be sampled still counts,
    once, through its parent; a sampled one is never counted twice)."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.seen, self.done = pid, {}, threading.Event()
        self.interval = interval
        self.commands: dict[int, str] = {}  # the command line of each process seen
        self._own: dict[int, int] = {}
        self._reaped: dict[int, int] = {}
        self._kids: dict[int, set[int]] = {}

    def run(self) -> None:
        while not self.done.wait(self.interval):
            stack = [self.pid]
            while stack:
                current = stack.pop()
                own, reaped = _own_and_reaped_ticks(current)
                self._own[current] = max(self._own.get(current, 0), own)
                self._reaped[current] = max(self._reaped.get(current, 0), reaped)
                if current not in self.commands:
                    self.commands[current] = _command_line(current)
                children = _children(current)
                self._kids.setdefault(current, set()).update(children)
                stack.extend(children)
            self.seen = {pid: own + max(0, self._reaped.get(pid, 0) - sum(
                self._own.get(kid, 0) for kid in self._kids.get(pid, ())))
                for pid, own in self._own.items()}

    @property
    def seconds(self) -> float:
        return sum(self.seen.values()) / _TICKS


def run_tree(argv: Sequence[str], cwd: Path = REPO_ROOT, env: dict[str, str] | None = None,
             interval: float = 0.1) -> tuple[dict[str, Any], "TreeCpu", str]:
    """Run a command to its end, sampling its process tree: ({wall_s, cpu_s, peak_rss}, the
    sampler (each process's command line and CPU), its output). Exits when it fails."""
    started = time.perf_counter()
    proc = subprocess.Popen(list(argv), cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    cpu = TreeCpu(proc.pid, interval)
    cpu.start()
    with PeakMemory(proc.pid) as memory:
        output, _ = proc.communicate()
    wall = time.perf_counter() - started
    cpu.done.set()
    cpu.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} … failed ({proc.returncode}):\n{output[-3000:]}")
    return ({"wall_s": round(wall, 2), "cpu_s": round(cpu.seconds, 2), "peak_rss": memory.peak},
            cpu, output)


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def fmt_bytes(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


# --- the machine ------------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    """CPU count and model, memory, OS, Python, Java: what every figure must be read with."""
    info: dict[str, Any] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                            "python": sys.version.split()[0]}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory"] = fmt_bytes(int(line.split()[1]) * 1024)
                break
        info["load_average"] = os.getloadavg()[0]
    except OSError:
        pass
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        info["java"] = (out.stderr or out.stdout).splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return info


# --- Spark ------------------------------------------------------------------------------------

BENCH_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
}


def spark_session(master: str = "local[2]", driver_memory: str = "4g", app_name: str = "bench"):
    """The bench's one SparkSession (Delta configured by mirrorspec)."""
    from mirrorspec.spark.platform.session import build_session

    conf = dict(BENCH_SPARK_CONF, **{"spark.driver.memory": driver_memory})
    return build_session(master, conf, app_name=app_name)


# --- output -----------------------------------------------------------------------------------

def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], out=None) -> None:
    """A plain fixed-width table (pipes, so it pastes into Markdown as is)."""
    out = out or sys.stdout
    text = [[str(c) for c in columns]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in text) for i in range(len(columns))]
    line = lambda r: "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |"  # noqa: E731
    out.write(line(text[0]) + "\n")
    out.write("|" + "|".join("-" * (w + 2) for w in widths) + "|\n")
    for r in text[1:]:
        out.write(line(r) + "\n")
    out.flush()


def emit(figures: dict[str, Any], as_json: bool) -> dict[str, Any]:
    """With --json, print the figures as one JSON line (run_all reads the last line); people
    get the bench's own lines instead."""
    if as_json:
        print(json.dumps(figures, default=str), flush=True)
    return figures


def rate(count: float, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")


# --- where the time goes: Spark event logs -------------------------------------------------------

def event_log_conf(folder: Path) -> str:
    """PYSPARK_SUBMIT_ARGS that make the bench's driver write a Spark event log to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    return (f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://{folder} "
            "--conf spark.eventLog.compress=false pyspark-shell")


def _open_log(path: Path):
    """An event log as text lines; Spark 4 compresses with zstd by default."""
    if path.suffix == ".zstd":
        import io

        import zstandard  # pyspark[connect] brings it

        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def stage_profile(folder: Path, top: int = 6) -> list[dict[str, Any]]:
    """The slowest Spark stages in the event logs under `folder`: name, wall s, tasks, task s.

    Wall time is submission → completion of the stage; task time is the sum of its tasks'
    run times (executor CPU + I/O), which says what bounds the stage on 2 cores.
    """
    stages: dict[tuple, dict[str, Any]] = {}
    # Spark 4 writes rolling logs: eventlog_v2_<app>/events_<n>_<app>[.zstd…]
    for log in sorted(p for p in folder.rglob("events_*") if p.is_file()) + sorted(
            p for p in folder.glob("*") if p.is_file()):
        with _open_log(log) as handle:
            for line in handle:
                if '"SparkListenerStageCompleted"' not in line and \
                        '"SparkListenerTaskEnd"' not in line:
                    continue
                event = json.loads(line)
                if event["Event"] == "SparkListenerTaskEnd":
                    key = (log.name, event["Stage ID"], event.get("Stage Attempt ID", 0))
                    info = event.get("Task Info", {})
                    entry = stages.setdefault(key, {"task_s": 0.0})
                    entry["task_s"] += (info.get("Finish Time", 0) - info.get("Launch Time", 0)) / 1e3
                    continue
                info = event["Stage Info"]
                key = (log.name, info["Stage ID"], info.get("Stage Attempt ID", 0))
                entry = stages.setdefault(key, {"task_s": 0.0})
                started, finished = info.get("Submission Time"), info.get("Completion Time")
                entry.update({"stage": info["Stage ID"], "name": info.get("Stage Name", "?"),
                              "tasks": info.get("Number of Tasks"),
                              "wall_s": (finished - started) / 1e3 if started and finished else 0.0})
    done = [s for s in stages.values() if "name" in s]
    for entry in done:
        entry["task_s"] = round(entry["task_s"], 2)
        entry["wall_s"] = round(entry["wall_s"], 2)
    return sorted(done, key=lambda s: s["wall_s"], reverse=True)[:top]
