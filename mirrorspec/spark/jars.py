"""Delta Lake's jars (and the PostgreSQL JDBC driver): fetched once from Maven Central at setup, used offline at run time.

`python -m mirrorspec.spark.jars` (run by `make .venv`) copies `delta-spark` and `delta-storage`
for the installed delta-spark/pyspark versions into a cache folder with Maven. Sessions then point
`spark.jars` at them, so a run never needs the network. Pure Python: no pyspark import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from mirrorspec.errors import SetupError

SCALA_VERSION = "2.13"


def cache_dir() -> Path:
    """Where the jars live: $MIRRORSPEC_JARS_DIR, else ~/.cache/mirrorspec/jars."""
    root = os.environ.get("MIRRORSPEC_JARS_DIR")
    return Path(root) if root else Path.home() / ".cache" / "mirrorspec" / "jars"


def delta_artifacts() -> list[str]:
    """Maven coordinates of the Delta jars matching the installed delta-spark and pyspark."""
    delta_version = metadata.version("delta-spark")
    spark_major_minor = ".".join(metadata.version("pyspark").split(".")[:2])
    return [
        f"io.delta:delta-spark_{spark_major_minor}_{SCALA_VERSION}:{delta_version}",
        f"io.delta:delta-storage:{delta_version}",
    ]


# Other jars sessions load when they are cached: the PostgreSQL JDBC driver (reconcile --against
# jdbc:postgresql:…). A missing one only makes its feature unavailable.
EXTRA_ARTIFACTS = ("org.postgresql:postgresql:42.7.4",)


def jar_file_name(coordinate: str) -> str:
    _, artifact, version = coordinate.split(":")
    return f"{artifact}-{version}.jar"


def cached_jars() -> list[Path] | None:
    """The cached jar files for the installed versions, or None when any is missing."""
    folder = cache_dir()
    paths = [folder / jar_file_name(c) for c in delta_artifacts()]
    return paths if all(p.is_file() and p.stat().st_size > 0 for p in paths) else None


def cached_extra_jars() -> list[Path]:
    """The EXTRA_ARTIFACTS jars present in the cache."""
    folder = cache_dir()
    paths = [folder / jar_file_name(c) for c in EXTRA_ARTIFACTS]
    return [p for p in paths if p.is_file() and p.stat().st_size > 0]


def fetch(quiet: bool = True) -> list[Path]:
    """Copy the Delta jars and EXTRA_ARTIFACTS into the cache with Maven (no-op for the ones
    already there)."""
    existing = cached_jars()
    if existing and len(cached_extra_jars()) == len(EXTRA_ARTIFACTS):
        return existing + cached_extra_jars()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SetupError("Maven (mvn) is needed once to fetch Delta Lake's jars",
                         hint="install it (apt-get install maven) and rerun `make .venv`")
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    present = {p.name for p in (existing or []) + cached_extra_jars()}
    for coordinate in delta_artifacts() + list(EXTRA_ARTIFACTS):
        if jar_file_name(coordinate) in present:
            continue
        command = [mvn, "-B", "dependency:copy", f"-Dartifact={coordinate}:jar",
                   f"-DoutputDirectory={folder}", "-Dmdep.overWriteIfNewer=true"]
        if quiet:
            command.insert(2, "-q")
        result = subprocess.run(command, capture_output=True, text=True, cwd=folder)
        if result.returncode != 0:
            raise SetupError(f"could not fetch {coordinate} from Maven Central:\n"
                             f"{result.stdout[-2000:]}{result.stderr[-2000:]}",
                             hint="check the network (or a Maven mirror) and rerun `make .venv`")
    jars = cached_jars()
    if not jars:
        raise SetupError(f"Maven ran but the jars are not in {folder}")
    return jars + cached_extra_jars()


def main() -> int:
    """`python -m mirrorspec.spark.jars` (run by `make`): fetch the jars; exit 1 with the reason."""
    try:
        jars = fetch()
    except SetupError as exc:
        print(f"mirrorspec: {exc.render()}", file=sys.stderr)
        return 1
    for jar in jars:
        print(f"jar: {jar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
