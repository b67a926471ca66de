"""`debug`: what this installation and project need, checked one line each — for `mirrorspec
debug`.

Python and the packages, the Java Spark would start, the jar cache (Delta's jars and each
optional set), the project and its profile, the local paths it writes and their permissions, a
Spark start test, and the Kafka brokers / S3 endpoint / JDBC server it is configured for. Every
failed check names its fix; the command exits 1 when any failed (docs/deploy.md).
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mirrorspec.base.errors import FailedRun, MirrorspecError

OK, WARN, FAIL, SKIP = "ok", "warn", "FAIL", "skip"


@dataclass(frozen=True)
class Check:
    """One line of `debug`: what was checked, ok/warn/FAIL/skip, what was found, the fix."""

    name: str
    status: str
    detail: str
    fix: str = ""


def _packages() -> list[Check]:
    found = [Check("python", OK, f"{platform.python_version()} ({sys.executable})")]
    for name in ("mirrorspec", "pyspark", "delta-spark", "deltalake", "pyarrow"):
        try:
            found.append(Check(name, OK, metadata.version(name)))
        except metadata.PackageNotFoundError:
            found.append(Check(name, FAIL, "not installed",
                               f"pip install -e . in mirrorspec's environment ({name})"))
    return found


def _java() -> Check:
    from mirrorspec.spark.platform import java

    try:
        info = java.check_java()
    except MirrorspecError as exc:
        return Check("java", FAIL, exc.message, exc.hint or "")
    status = OK if info.major in java.TESTED_JAVA else WARN
    detail = f"{info.version} ({info.executable}, from {info.source})"
    fix = "" if status == OK else (f"Spark 4.1 documents Java {' and '.join(map(str, java.TESTED_JAVA))}; "
                                  "set JAVA_HOME to one of them if Spark misbehaves")
    return Check("java", status, detail, fix)


def _jars() -> list[Check]:
    from mirrorspec.spark.platform import jars

    folder = jars.cache_dir()
    found = [_writable("jar cache", folder, f"set {jars.CACHE_ENV} to a folder you can write")]
    delta = jars.cached_jars()
    found.append(Check("jars: delta", OK if delta else FAIL,
                       ", ".join(p.name for p in delta) if delta else
                       f"{', '.join(jars.jar_file_name(c) for c in jars.delta_artifacts())} "
                       f"not in {folder}",
                       "" if delta else "python -m mirrorspec.spark.platform.jars (downloads them, no "
                                        "Maven needed)"))
    for name in jars.extra_sets():
        try:
            cached = jars.cached_extra_jars(name)
        except MirrorspecError as exc:
            found.append(Check(f"jars: {name}", WARN, exc.message))
            continue
        found.append(Check(f"jars: {name}", OK if cached else SKIP,
                           f"{len(cached)} jar(s) in {jars.extra_set_dir(name)}" if cached
                           else "not fetched (optional)",
                           "" if cached else f"python -m mirrorspec.spark.platform.jars {name} (needs "
                                             "Maven) when a profile names it"))
    kafka = jars.cached_kafka_jars()
    found.append(Check("jars: kafka", OK if kafka else SKIP,
                       f"{len(kafka)} jar(s) in {jars.kafka_dir()}" if kafka
                       else "not fetched (optional: source.kafka tables)",
                       "" if kafka else "python -m mirrorspec.spark.platform.jars (needs Maven)"))
    return found


def _writable(name: str, path: Path, fix: str) -> Check:
    """A local folder that must be writable: it, or the nearest existing parent."""
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        return Check(name, FAIL, f"{path}: {probe} is not a folder", fix)
    if not os.access(probe, os.W_OK | os.X_OK):
        return Check(name, FAIL, f"{path}: {probe} is not writable by this user", fix)
    state = "exists" if path.exists() else f"will be created (in {probe})"
    return Check(name, OK, f"{path} ({state}, writable)")


def _project(params: dict[str, Any]) -> tuple[list[Check], Any]:
    """The project's checks (files, profile, its folders) and its plan (None when it has
    none or does not load); `params`: project_dir, target, vars_text, profiles_dir."""
    from mirrorspec.compile import load_plan_context
    from mirrorspec.load.project import PROJECT_FILE
    from mirrorspec.operate.preflight import missing_landing_zone

    folder = Path(params["project_dir"])
    if not (folder / PROJECT_FILE).is_file():
        return [Check("project", SKIP, f"no {PROJECT_FILE} in {folder.resolve()}",
                      "run it in a project folder (or --project-dir) to check the project")], None
    try:
        plan = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                                 params["profiles_dir"]).plan
    except MirrorspecError as exc:
        return [Check("project", FAIL, exc.render().splitlines()[0],
                      "mirrorspec validate shows every problem")], None
    found = [Check("project", OK, f"{plan.project_name}: {len(plan.tables)} table(s)"),
             _profiles_file(folder, params["profiles_dir"]),
             Check("profile", OK, f"{plan.profile}, output {plan.target!r}; Spark "
                   + (f"remote {plan.spark.remote}" if plan.spark.remote
                      else f"master {plan.spark.master}"))]
    for name, location in (("landing zone", plan.landing_zone), ("warehouse", plan.warehouse),
                           ("state", plan.state_path)):
        if "://" in location and not location.startswith("file:"):
            found.append(Check(name, OK, f"{location} (remote: checked below when reachable)"))
        elif name == "landing zone" and (missing := missing_landing_zone(plan)) is not None:
            found.append(_missing_landing_zone(missing))
        else:
            found.append(_writable(name, Path(location.removeprefix("file:")),
                                   f"fix the profile output's {name.replace(' ', '_')} or the "
                                   "folder's permissions"))
    return found, plan


def _missing_landing_zone(missing: Any) -> Check:
    """A landing zone that is not there: a failure when the warehouse already mirrors from one
    (`run` refuses), else a warning (a new project's, or a did-you-mean) if it can be created."""
    if missing.refused:
        return Check("landing zone", FAIL, missing.message(), missing.hint())
    writable = _writable("landing zone", Path(missing.path),
                         "fix the profile output's landing_zone or the folder's permissions")
    if writable.status == FAIL:
        return writable
    return Check("landing zone", WARN, f"{missing.message()}; "
                 f"{writable.detail.removeprefix(missing.path).strip(' ()')}", missing.hint())


def _profiles_file(project: Path, profiles_dir: str | None) -> Check:
    """Which profiles.yml the project uses, and where that choice came from."""
    from mirrorspec.load.project import find_profiles, profiles_origin

    path, _ = find_profiles(project.resolve(), profiles_dir)
    if path is None:
        return Check("profiles.yml", OK, "none: the local defaults (landing_zone/, warehouse/, "
                                         "local[*])")
    origin = profiles_origin(profiles_dir) or (
        "the project folder" if path.parent == project.resolve() else "~/.mirrorspec")
    return Check("profiles.yml", OK, f"{path} (from {origin})")


def _reachable(name: str, host: str, port: int, fix: str, timeout: float = 3.0) -> Check:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        return Check(name, FAIL, f"{host}:{port}: {exc.strerror or exc}", fix)
    return Check(name, OK, f"{host}:{port} answers")


def _services(plan, jdbc: str | None) -> list[Check]:
    found = []
    servers: set[str] = set()
    for table in plan.tables if plan is not None else []:
        kafka = table.source.kafka or {}
        servers.update(s.strip() for s in str(kafka.get("bootstrap_servers", "")).split(",")
                       if s.strip())
    for server in sorted(servers):
        host, _, port = server.rpartition(":")
        found.append(_reachable(f"kafka {server}", host or server, int(port or 9092),
                                "start the broker or fix source.kafka.bootstrap_servers"))
    locations = [plan.landing_zone, plan.warehouse, plan.state_path] if plan is not None else []
    if any(loc.split("://")[0] in ("s3a", "s3", "s3n") for loc in locations if "://" in loc):
        endpoint = str(plan.spark.conf.get("spark.hadoop.fs.s3a.endpoint") or "s3.amazonaws.com")
        parsed = urlparse(endpoint if "://" in endpoint else "https://" + endpoint)
        port = parsed.port or (80 if parsed.scheme == "http" else 443)
        found.append(_reachable(f"s3 {parsed.hostname}", parsed.hostname or "", port,
                                "check spark.hadoop.fs.s3a.endpoint in the profile, or the "
                                "network"))
    if jdbc:
        from mirrorspec.security.jdbc_urls import host_and_port

        server = host_and_port(jdbc)
        if server is None:
            found.append(Check("jdbc", FAIL, "the --jdbc URL names no host:port",
                               "give it as jdbc:postgresql://host:port/database"))
        else:
            found.append(_reachable(f"jdbc {server[0]}", server[0], server[1],
                                    "start the database or fix the URL"))
    return found


def _spark(plan, console) -> Check:
    from mirrorspec.artifacts.plan import resolve_secrets
    from mirrorspec.spark.ops.selftest import spark_round_trip

    spec = plan.spark if plan is not None else None
    try:
        detail = spark_round_trip(resolve_secrets(spec.master) if spec else "local[*]",
                                  resolve_secrets(dict(spec.conf)) if spec else {},
                                  resolve_secrets(spec.remote) if spec and spec.remote else None,
                                  console)
    except MirrorspecError as exc:
        return Check("spark start", FAIL, exc.message, exc.hint or "")
    except Exception as exc:  # noqa: BLE001 - reported as the check's failure, with the JVM log
        from mirrorspec.spark.platform.session import jvm_log_path

        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log = jvm_log_path()
        return Check("spark start", FAIL, first[:300],
                     f"Spark's own output is in {log}" if log else "see the error above")
    return Check("spark start", OK, detail)


def run_checks(params: dict[str, Any], start_spark: bool, jdbc: str | None,
               console: Any) -> list[Check]:
    """Every check, in order: Python and the packages, Java, the jars, the project (`params`:
    project_dir, target, vars_text, profiles_dir), the services it names (and `jdbc`), and
    with `start_spark` a Spark round trip (skipped without a usable Java)."""
    checks = _packages() + [_java()] + _jars()
    project_checks, plan = _project(params)
    checks += project_checks + _services(plan, jdbc)
    java_ok = next(c for c in checks if c.name == "java").status != FAIL
    if start_spark and java_ok:
        checks.append(_spark(plan, console))
    elif start_spark:
        checks.append(Check("spark start", SKIP, "no usable Java (see above)"))
    return checks


def failure(checks: list[Check]) -> FailedRun | None:
    """The FailedRun naming the checks that failed; else None."""
    failed = [c.name for c in checks if c.status == FAIL]
    if not failed:
        return None
    return FailedRun(f"{len(failed)} check(s) failed: {', '.join(failed)}",
                     hint="each failed line says its fix")
