"""What a Spark event log says about one command, in figures that don't depend on the machine's
load: how many SQL queries Spark planned, how many jobs, stages and tasks it ran, and (as a
timeline) where the wall seconds went between the JVM's start, the first job and the last.

A whole command writes one log when it runs with `event_log_env(folder)` in its environment
(PYSPARK_SUBMIT_ARGS: the JVM the command starts picks it up; mirrorspec's own conf is kept).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any


def event_log_env(folder: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose Spark driver writes an uncompressed event log to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(base if base is not None else os.environ)
    env["PYSPARK_SUBMIT_ARGS"] = (f"--conf spark.eventLog.enabled=true --conf "
                                  f"spark.eventLog.dir=file://{folder} --conf "
                                  "spark.eventLog.compress=false pyspark-shell")
    return env


def _events(folder: Path):
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".crc"))
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("{"):
                    yield json.loads(line)


def summarize(folder: Path) -> dict[str, Any]:
    """Counts and a timeline of the event log(s) under `folder`.

    `queries`: SQL executions (each one analysed, optimised and planned by the driver; a
    command's first of each shape also code-generates); `jobs`, `stages` (run, not skipped),
    `tasks`; `by_query`: jobs per SQL description (the callsite PySpark reports); seconds:
    `start_to_first_job` (JVM + SparkContext up → first job submitted, which includes the
    driver's Python before it), `in_jobs` (wall time some job was running: the union of job
    intervals), `between_jobs` (first job → last job end, minus `in_jobs`: the driver planning,
    code-generating, committing, and Python), `after_last_job` (→ application end)."""
    app_start = app_end = None
    jobs: dict[int, dict] = {}
    stages_run = tasks = 0
    task_seconds = 0.0
    queries: dict[int, dict] = {}
    for event in _events(folder):
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            app_start = event["Timestamp"]
        elif kind == "SparkListenerApplicationEnd":
            app_end = event["Timestamp"]
        elif kind == "SparkListenerJobStart":
            props = event.get("Properties") or {}
            jobs[event["Job ID"]] = {"start": event["Submission Time"],
                                     "query": props.get("spark.sql.execution.id"),
                                     "callsite": props.get("callSite.short", "")}
        elif kind == "SparkListenerJobEnd":
            if event["Job ID"] in jobs:
                jobs[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            stages_run += 1
        elif kind == "SparkListenerTaskEnd":
            tasks += 1
            info = event.get("Task Info", {})
            task_seconds += (info.get("Finish Time", 0) - info.get("Launch Time", 0)) / 1e3
        elif kind.endswith("SQLExecutionStart"):
            queries[event["executionId"]] = {"start": event["time"],
                                             "description": event.get("description", "")}
        elif kind.endswith("SQLExecutionEnd"):
            if event["executionId"] in queries:
                queries[event["executionId"]]["end"] = event["time"]
    out: dict[str, Any] = {"queries": len(queries), "jobs": len(jobs), "stages": stages_run,
                           "tasks": tasks, "task_s": round(task_seconds, 2)}
    spans = sorted((j["start"], j.get("end", j["start"])) for j in jobs.values())
    if spans and app_start is not None:
        busy, current = 0, None
        for start, end in spans:
            if current is None or start > current[1]:
                if current is not None:
                    busy += current[1] - current[0]
                current = [start, end]
            else:
                current[1] = max(current[1], end)
        busy += current[1] - current[0]
        first, last = spans[0][0], max(e for _, e in spans)
        out.update({"start_to_first_job_s": round((first - app_start) / 1e3, 2),
                    "in_jobs_s": round(busy / 1e3, 2),
                    "between_jobs_s": round((last - first - busy) / 1e3, 2),
                    "after_last_job_s": round(((app_end or last) - last) / 1e3, 2)})
    by_query: Counter = Counter()
    for job in jobs.values():
        query = queries.get(int(job["query"])) if job["query"] is not None else None
        label = (query or {}).get("description") or job["callsite"] or "?"
        by_query[label[:90]] += 1
    out["by_query"] = dict(by_query.most_common())
    return out


def _is_python_worker(command: str) -> bool:
    return any(name in command for name in ("pyspark.daemon", "pyspark.worker",
                                             "mirrorspec.spark.publish.python_daemon"))


def python_workers(commands: dict[int, str], cpu_ticks: dict[int, int], ticks: int
                   ) -> tuple[int, float]:
    """How many Python worker processes (pyspark's daemon and its forks) a process tree had,
    from `{pid: command line}`, and their CPU seconds (from `{pid: clock ticks}`)."""
    pids = [pid for pid, command in commands.items() if _is_python_worker(command)]
    return len(pids), round(sum(cpu_ticks.get(pid, 0) for pid in pids) / ticks, 2)
