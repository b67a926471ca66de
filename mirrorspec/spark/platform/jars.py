"""Delta Lake's jars (and optional connector sets): fetched once from Maven Central, used offline.

`python -m mirrorspec.spark.platform.jars` (run by `make .venv`) downloads `delta-spark` and `delta-storage`
for the installed delta-spark/pyspark versions into a cache folder: plain HTTPS from Maven Central
(or $MIRRORSPEC_MAVEN_REPO), each jar checked against the published SHA-1; no Maven needed for
them. Maven is used only for the optional sets, which need their transitive dependencies
resolved. Sessions then point
`spark.jars` at them, so a run never needs the network. `python -m mirrorspec.spark.platform.jars s3`
also fetches an optional set: `s3` is `hadoop-aws` for the Hadoop version bundled in pyspark with
its AWS SDK bundle (resolved by Maven), used by a session whose conf says
`mirrorspec.extra.jars: s3`. Spark's Kafka connector (`spark-sql-kafka-0-10` with
kafka-clients, commons-pool2 and the token provider) is fetched into the `kafka/` sub-folder and
added to every session when present. Pure Python: no pyspark import.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from mirrorspec.base.errors import SetupError

SCALA_VERSION = "2.13"
CACHE_ENV = "MIRRORSPEC_JARS_DIR"
MAVEN_REPO_ENV = "MIRRORSPEC_MAVEN_REPO"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


def cache_dir() -> Path:
    """Where the jars live: $MIRRORSPEC_JARS_DIR, else ~/.cache/mirrorspec/jars."""
    root = os.environ.get(CACHE_ENV)
    return Path(root) if root else Path.home() / ".cache" / "mirrorspec" / "jars"


def delta_artifacts() -> list[str]:
    """Maven coordinates of the Delta jars matching the installed delta-spark and pyspark."""
    delta_version = metadata.version("delta-spark")
    spark_major_minor = ".".join(metadata.version("pyspark").split(".")[:2])
    return [
        f"io.delta:delta-spark_{spark_major_minor}_{SCALA_VERSION}:{delta_version}",
        f"io.delta:delta-storage:{delta_version}",
    ]


def bundled_hadoop_version() -> str:
    """The Hadoop version pyspark bundles (its `jars/hadoop-client-api-X.jar`)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    folder = Path(spec.origin).parent / "jars" if spec and spec.origin else None
    for jar in sorted(folder.glob("hadoop-client-api-*.jar")) if folder else ():
        match = re.fullmatch(r"hadoop-client-api-(.+)\.jar", jar.name)
        if match:
            return match.group(1)
    raise SetupError("pyspark's jars folder has no hadoop-client-api-*.jar",
                     hint="reinstall pyspark (make .venv)")


def extra_sets() -> dict[str, list[str]]:
    """Optional jar sets by name → the Maven coordinates whose runtime dependencies they hold."""
    return {"s3": [f"org.apache.hadoop:hadoop-aws:{bundled_hadoop_version()}"],
            # abfs(s):// (ADLS Gen2, OneLake, `mirrorspec serve`): hadoop-azure for the same Hadoop
            "azure": [f"org.apache.hadoop:hadoop-azure:{bundled_hadoop_version()}"],
            # the PostgreSQL JDBC driver, for `reconcile --against jdbc:postgresql:…`
            "postgres": ["org.postgresql:postgresql:42.7.4"]}


def jar_file_name(coordinate: str) -> str:
    _, artifact, version = coordinate.split(":")
    return f"{artifact}-{version}.jar"


def cached_jars() -> list[Path] | None:
    """The cached jar files for the installed versions, or None when any is missing."""
    folder = cache_dir()
    paths = [folder / jar_file_name(c) for c in delta_artifacts()]
    return paths if all(p.is_file() and p.stat().st_size > 0 for p in paths) else None


def _maven() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SetupError("Maven (mvn) is needed once to fetch the optional jar sets (their "
                         "dependencies are resolved by Maven); Delta's own jars don't need it",
                         hint="install it (apt-get install maven) and rerun `make .venv`")
    return mvn


def _maven_goal(mvn: str, arguments: list[str], cwd: Path, what: str, quiet: bool) -> None:
    """Run one Maven goal in batch mode; SetupError with Maven's output tail when it fails."""
    command = [mvn, "-B", *(["-q"] if quiet else []), *arguments]
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if result.returncode != 0:
        raise SetupError(f"could not fetch {what} from Maven Central:\n"
                         f"{result.stdout[-2000:]}{result.stderr[-2000:]}",
                         hint="check the network (or a Maven mirror) and rerun `make .venv`")


def extra_set_dir(name: str) -> Path:
    """The cache folder of one optional jar set, named after its coordinates (so a pyspark
    upgrade with another Hadoop version fetches a new set)."""
    coordinates = extra_sets()[name]
    tag = "_".join(c.replace(":", "-") for c in coordinates)
    return cache_dir() / f"{name}-{tag}"


def cached_extra_jars(name: str) -> list[Path] | None:
    """The cached jars of an optional set, or None when it was not fetched."""
    if name not in extra_sets():
        raise SetupError(f"unknown jar set {name!r} (known: {', '.join(extra_sets())})")
    folder = extra_set_dir(name)
    if not (folder / ".complete").is_file():
        return None
    return sorted(folder.glob("*.jar"))


def fetch_extra(name: str, quiet: bool = True) -> list[Path]:
    """Copy an optional jar set with its runtime dependencies into the cache (no-op when there)."""
    existing = cached_extra_jars(name)
    if existing:
        return existing
    mvn = _maven()
    folder = writable_cache(extra_set_dir(name))
    with tempfile.TemporaryDirectory() as work:
        Path(work, "pom.xml").write_text(_pom(extra_sets()[name]), encoding="utf-8")
        _maven_goal(mvn, ["dependency:copy-dependencies", f"-DoutputDirectory={folder}",
                          "-DincludeScope=runtime"], Path(work), f"the {name} jars", quiet)
    (folder / ".complete").write_text("\n".join(extra_sets()[name]) + "\n", encoding="utf-8")
    return sorted(folder.glob("*.jar"))


def fetch(quiet: bool = True) -> list[Path]:
    """Download the Delta jars into the cache from Maven Central (no Maven needed: urllib, each
    file checked against the repository's .sha1); a no-op when they are already there."""
    existing = cached_jars()
    if existing:
        return existing
    folder = writable_cache(cache_dir())
    for coordinate in delta_artifacts():
        target = folder / jar_file_name(coordinate)
        if not (target.is_file() and target.stat().st_size > 0):
            download_jar(coordinate, target)
    jars = cached_jars()
    if not jars:
        raise SetupError(f"the Delta jars were downloaded but are not in {folder}")
    return jars


def maven_repository() -> str:
    """Where jars are downloaded from: $MIRRORSPEC_MAVEN_REPO (a mirror), else Maven Central."""
    return (os.environ.get(MAVEN_REPO_ENV) or MAVEN_CENTRAL).rstrip("/")


def artifact_url(coordinate: str, repository: str | None = None) -> str:
    """The URL of a jar in a Maven repository layout (group dots become folders)."""
    group, artifact, version = coordinate.split(":")
    return (f"{repository or maven_repository()}/{group.replace('.', '/')}/{artifact}/"
            f"{version}/{artifact}-{version}.jar")


def download_jar(coordinate: str, target: Path, timeout: float = 60.0) -> Path:
    """Download one jar to `target` (temporary name, then renamed), its SHA-1 checked against
    the `.sha1` file next to it in the repository; SetupError naming the fix otherwise."""
    import hashlib
    import urllib.error
    import urllib.request

    url = artifact_url(coordinate)
    fix = (f"check the network (or set {MAVEN_REPO_ENV} to a Maven mirror) and rerun "
           f"`python -m mirrorspec.spark.platform.jars`; offline, copy {target.name} from a machine "
           f"that has it into {target.parent}")
    try:
        with urllib.request.urlopen(url + ".sha1", timeout=timeout) as response:
            expected = response.read(200).decode("ascii", "replace").split()[0].strip().lower()
        digest = hashlib.sha1(usedforsecurity=False)  # the checksum Maven Central publishes
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as src:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != expected:
                raise SetupError(f"{url}: SHA-1 {digest.hexdigest()} is not the published "
                                 f"{expected}; the file was not kept", hint=fix)
            os.replace(temp, target)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)
    except (urllib.error.URLError, OSError, IndexError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise SetupError(f"could not download {coordinate} from {url}: {reason}",
                         hint=fix) from None
    return target


def writable_cache(folder: Path) -> Path:
    """`folder`, created, after checking a file can be written there (SetupError if not)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise SetupError(f"the jar cache {folder} is not writable: {exc.strerror or exc}",
                         hint=f"set {CACHE_ENV} to a folder you can write (or fix the "
                              "folder's owner/permissions)") from None
    return folder


# --- Spark's Kafka connector -----------------------------------------------------------------

KAFKA_CONNECTOR = "spark-sql-kafka-0-10_" + SCALA_VERSION
# The connector's jars pyspark doesn't ship (the rest of its dependencies are in pyspark/jars).
KAFKA_ARTIFACT_IDS = (KAFKA_CONNECTOR, f"spark-token-provider-kafka-0-10_{SCALA_VERSION}",
                      "kafka-clients", "commons-pool2")
_CENTRAL_ONLY = """<settings><mirrors><mirror><id>central</id><mirrorOf>*</mirrorOf>
<url>https://repo.maven.apache.org/maven2</url></mirror></mirrors></settings>
"""


def kafka_dir() -> Path:
    return cache_dir() / "kafka"


def kafka_versions() -> list[str]:
    """Connector versions to try: pyspark's own, then earlier patch releases of its minor
    (a patch release of the connector works with any Spark of the same minor)."""
    version = metadata.version("pyspark").split("+")[0]
    parts = version.split(".")
    if len(parts) < 3 or not parts[2].isdigit():
        return [version]
    return [f"{parts[0]}.{parts[1]}.{patch}" for patch in range(int(parts[2]), -1, -1)]


def kafka_coordinate(version: str | None = None) -> str:
    """Maven coordinate of the connector (for spark.jars.packages / --packages)."""
    return f"org.apache.spark:{KAFKA_CONNECTOR}:{version or kafka_versions()[0]}"


def cached_kafka_jars() -> list[Path] | None:
    """The cached connector jars (one per artifact of KAFKA_ARTIFACT_IDS), or None."""
    folder = kafka_dir()
    if not folder.is_dir():
        return None
    found = []
    for artifact in KAFKA_ARTIFACT_IDS:
        matches = sorted(p for p in folder.glob(f"{artifact}-*.jar")
                         if p.name[len(artifact) + 1:][:1].isdigit() and p.stat().st_size > 0)
        if not matches:
            return None
        found.append(matches[-1])
    return found


def fetch_kafka(quiet: bool = True) -> list[Path]:
    """Copy the Kafka connector and its dependencies into the cache with Maven (no-op when
    there). Tries pyspark's version first, then earlier patch releases of the same minor."""
    existing = cached_kafka_jars()
    if existing:
        return existing
    mvn = _maven()
    folder = writable_cache(kafka_dir())
    (folder / "settings.xml").write_text(_CENTRAL_ONLY, encoding="utf-8")
    errors = []
    for version in kafka_versions():
        (folder / "pom.xml").write_text(_pom([kafka_coordinate(version)], "kafka-jars"),
                                        encoding="utf-8")
        try:
            _maven_goal(mvn, ["-s", "settings.xml", "dependency:copy-dependencies",
                              f"-DoutputDirectory={folder}", "-DincludeScope=runtime",
                              "-DincludeArtifactIds=" + ",".join(KAFKA_ARTIFACT_IDS)],
                        folder, kafka_coordinate(version), quiet)
        except SetupError as exc:
            errors.append(f"{version}: {exc.message[-600:]}")
            continue
        found = cached_kafka_jars()
        if found:
            return found
        errors.append(f"{version}: Maven ran but the jars are not in {folder}")
    raise SetupError("could not fetch Spark's Kafka connector from Maven Central:\n"
                     + "\n".join(errors))


def _pom(coordinates: list[str] | tuple[str, ...], artifact_id: str = "jars") -> str:
    """A throwaway Maven project that depends on `coordinates` (group:artifact:version), for
    `dependency:copy-dependencies`."""
    dependencies = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        "</dependency>" for g, a, v in (c.split(":") for c in coordinates))
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f"<groupId>mirrorspec</groupId><artifactId>{artifact_id}</artifactId>"
            f"<version>1</version><packaging>pom</packaging><dependencies>{dependencies}"
            "</dependencies></project>\n")


def main(argv: list[str] | None = None) -> int:
    """`python -m mirrorspec.spark.platform.jars [SET…]` (run by `make`): fetch Delta's jars, then the
    optional sets named (`s3`); exit 1 with the reason."""
    names = sys.argv[1:] if argv is None else argv
    try:
        for jar in fetch():
            print(f"delta jar: {jar}")
        for name in names:
            found = fetch_extra(name)
            print(f"{name} jars: {len(found)} in {extra_set_dir(name)}")
    except SetupError as exc:
        print(f"mirrorspec: {exc.render()}", file=sys.stderr)
        return 1
    try:  # only Kafka sources need the connector: without it the rest still works
        for jar in fetch_kafka():
            print(f"kafka jar: {jar}")
    except SetupError as exc:
        print(f"mirrorspec: warning: {exc.render()} (Kafka sources won't run until it is "
              "fetched)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
