"""Every Spark Connect round trip of one `mirrorspec` command, timed and placed.

    python bench/_connect_trace.py OUT.json run [options…]

runs `mirrorspec run [options…]` in this process with pyspark's Connect client wrapped: each
RPC (an analysis such as `.schema`/`.columns`/`persist`, an execution such as `collect()` or a
write, a conf get/set/unset, a session's release) is recorded with its start and end (seconds
since the command began), its thread and the mirrorspec frames that made it. OUT.json gets the
list when the command exits; `summarize` groups it. Used by `warm_bench.py --profile`.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

_T0 = time.perf_counter()
_EPOCH0 = time.time()  # the same instant as _T0, for lining calls up with Spark's event log
_CALLS: list[dict[str, Any]] = []
_LOCK = threading.Lock()
_PACKAGE = os.sep + "mirrorspec" + os.sep


_SERVER_PID = int(os.environ.get("TRACE_SERVER_PID") or 0)  # the warm server's JVM, if known


def _server_cpu() -> float:
    """CPU seconds the server's JVM has used so far (0 when its pid is unknown)."""
    if not _SERVER_PID:
        return 0.0
    try:
        with open(f"/proc/{_SERVER_PID}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _frames() -> list[str]:
    """mirrorspec's frames of the current stack, innermost first, as `module.py:function:line`."""
    out = []
    for frame in reversed(traceback.extract_stack()[:-3]):
        if _PACKAGE in frame.filename and os.sep + "bench" + os.sep not in frame.filename:
            out.append(f"{frame.filename.rsplit(_PACKAGE, 1)[1]}:{frame.name}:{frame.lineno}")
    return out


def _record(kind: str, started: float, ended: float, frames: list[str], cpu: float) -> None:
    with _LOCK:
        _CALLS.append({"kind": kind, "start": round(started - _T0, 4),
                       "end": round(ended - _T0, 4), "thread": threading.current_thread().name,
                       "frames": frames, "server_cpu": round(_server_cpu() - cpu, 3)})


def install() -> None:
    """Wrap the Connect client's RPC methods (idempotent)."""
    from pyspark.sql.connect.client import core

    client = core.SparkConnectClient
    if getattr(client, "_traced", False):
        return
    client._traced = True

    def timed(name: str, label):
        original = getattr(client, name)

        def wrapper(self, *args, **kwargs):
            frames = _frames()
            cpu, started = _server_cpu(), time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                _record(label(args, kwargs), started, time.perf_counter(), frames, cpu)
        setattr(client, name, wrapper)

    timed("_analyze", lambda a, k: f"analyze:{a[0] if a else k.get('method')}")
    timed("_execute", lambda a, k: "execute")
    timed("config", lambda a, k: "config:" + (a[0].WhichOneof("op_type") if a else "?"))
    timed("release_session", lambda a, k: "release_session")

    fetch = client._execute_and_fetch_as_iterator

    def fetching(self, *args, **kwargs):
        frames = _frames()
        cpu, started = _server_cpu(), time.perf_counter()
        try:
            yield from fetch(self, *args, **kwargs)
        finally:
            _record("execute_fetch", started, time.perf_counter(), frames, cpu)
    client._execute_and_fetch_as_iterator = fetching


def summarize(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """RPCs and their seconds by kind and by the innermost mirrorspec function that made them."""
    by_kind: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    by_place: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for call in calls:
        seconds = call["end"] - call["start"]
        for table, key in ((by_kind, call["kind"]),
                           (by_place, call["frames"][0] if call["frames"] else "?")):
            table[key][0] += 1
            table[key][1] += seconds
    rounded = {k: [int(v[0]), round(v[1], 3)] for k, v in by_kind.items()}
    places = sorted(by_place.items(), key=lambda kv: -kv[1][1])
    return {"rpcs": len(calls), "rpc_s": round(sum(c["end"] - c["start"] for c in calls), 3),
            "by_kind": rounded,
            "by_place": {k: [int(v[0]), round(v[1], 3)] for k, v in places}}


def _jobs(events_folder: Path, since: float, until: float) -> list[dict[str, Any]]:
    """Spark jobs of the event log(s) under `events_folder` submitted between two epoch
    seconds: their start and end (epoch seconds) and what Spark says ran them."""
    from _eventlog import _events

    jobs: dict[int, dict[str, Any]] = {}
    for event in _events(events_folder):
        kind = event.get("Event")
        if kind == "SparkListenerJobStart":
            start = event["Submission Time"] / 1e3
            if since <= start <= until:
                props = event.get("Properties") or {}
                jobs[event["Job ID"]] = {"start": start, "end": start,
                                         "what": props.get("callSite.short", "")}
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]]["end"] = event["Completion Time"] / 1e3
    return sorted(jobs.values(), key=lambda j: j["start"])


def _epoch(text: str) -> float:
    import datetime as dt

    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=dt.timezone.utc).timestamp()


def breakdown(trace_file: Path, events_folder: Path, results_file: Path
              ) -> tuple[list[list[Any]], list[list[Any]]]:
    """Where one traced `run` spent its time: (steps, places).

    steps: [step, seconds, Spark jobs, RPCs, RPC seconds, the server's CPU seconds during
    them (with TRACE_SERVER_PID set; concurrent RPCs each count it)] for the command's start (imports,
    compiling, connecting), each table's steps from run_results.json, and its end (status
    files, exit). places: [innermost mirrorspec function, RPCs, RPC seconds, jobs, server CPU
    seconds] of every
    RPC, the slowest first; a job counts for the RPC during which it was submitted."""
    trace = json.loads(trace_file.read_text())
    epoch0, wall = trace["epoch0"], trace["wall_s"]
    calls = [dict(c, start=c["start"] + epoch0, end=c["end"] + epoch0) for c in trace["calls"]]
    jobs = _jobs(events_folder, epoch0, epoch0 + wall)
    results = json.loads(results_file.read_text())
    spans = []
    for table in results.get("results", []):
        for step in table.get("timing", []):
            spans.append((f"{table['unique_id']}: {step['name']}", _epoch(step["started_at"]),
                          _epoch(step["completed_at"])))
    spans.sort(key=lambda s: s[1])
    first = spans[0][1] if spans else epoch0 + wall
    last = max((s[2] for s in spans), default=first)
    spans = [("start: imports, compile, connect, sessions", epoch0, first), *spans,
             ("end: status files, run_results, exit", last, epoch0 + wall)]

    def inside(start: float, end: float, t: float) -> bool:
        return start <= t < end

    steps = []
    for name, start, end in spans:
        mine = [c for c in calls if inside(start, end, c["start"])]
        steps.append([name, round(end - start, 2),
                      sum(inside(start, end, j["start"]) for j in jobs), len(mine),
                      round(sum(c["end"] - c["start"] for c in mine), 2),
                      round(sum(c.get("server_cpu", 0.0) for c in mine), 2)])
    places: dict[str, list[Any]] = defaultdict(lambda: [0, 0.0, 0, 0.0])
    for call in calls:
        place = places[f"{call['kind'].split(':')[0]} {call['frames'][0] if call['frames'] else '?'}"]
        place[0] += 1
        place[1] += call["end"] - call["start"]
        place[2] += sum(inside(call["start"], call["end"] + 1e-3, j["start"]) for j in jobs)
        place[3] += call.get("server_cpu", 0.0)
    rows = [[k, v[0], round(v[1], 3), v[2], round(v[3], 2)] for k, v in
            sorted(places.items(), key=lambda kv: -kv[1][1])]
    return steps, rows


def main(argv: list[str]) -> None:
    out, command = argv[0], argv[1:]
    install()

    def dump() -> None:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump({"calls": _CALLS, "epoch0": _EPOCH0,
                       "wall_s": round(time.perf_counter() - _T0, 3)}, handle)
    atexit.register(dump)
    from mirrorspec.cli import main as cli_main

    sys.argv = ["mirrorspec", *command]
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1:])
