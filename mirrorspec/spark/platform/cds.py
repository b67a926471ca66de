"""A class-data-sharing (CDS) archive for the driver JVM: a faster start for every command.

A Spark driver loads and verifies some 15,000 classes of Spark, Delta and the JDK while it starts
and runs its first MERGE; that is most of a cold `mirror` command's fixed cost beyond the work
itself. A dynamic CDS archive (JDK 13 and later) holds those classes pre-parsed in one file the
JVM maps at start. `make` creates it once with `python -m mirrorspec.spark.ops.cds_training`, which runs a
small mirror pass (initial load, then a MERGE with deletes and deletion vectors) in a JVM started
with `-XX:ArchiveClassesAtExit`; `build_session` adds `-XX:SharedArchiveFile` whenever an archive
made for this exact JVM and class path exists. Figures: docs/performance.md.

The archive is named after what it depends on (the java binary, the folder of pyspark's jars
— each venv has its own —, the driver's extra class path and `spark.jars`), so a new JDK, venv
or jar set simply finds none and starts as before; `make` then creates one for it and deletes
the archives of pyspark installs that are gone. MIRRORSPEC_CDS: `auto` (default: use it when present, and a JVM that can't map it starts
without it), `off`, or `require` (`-Xshare:on`: the JVM refuses to start without it — for
diagnosis and the test that proves the archive works).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from mirrorspec.spark.platform import jars

ENV = "MIRRORSPEC_CDS"
# Part of the archive's name: a new training pass (other classes) makes a new archive.
TRAINING_VERSION = 3
MODES = ("auto", "off", "require")
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_CLASS_PATH = "spark.driver.extraClassPath"


def mode() -> str:
    """The MIRRORSPEC_CDS setting (an unknown value counts as `auto`)."""
    value = os.environ.get(ENV, "auto").strip().lower()
    return value if value in MODES else "auto"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def archive_path(conf: dict[str, str]) -> Path | None:
    """Where the archive for the JVM `conf` would start lives (None: no java found).

    Named after everything the JVM checks before it maps an archive: the java binary (a new JDK
    has another path or mtime), pyspark's jars (its class path: each jar's path, mtime and size,
    so a venv made again at the same path gets a new archive) and the extra class path, plus
    `spark.jars` (Delta's, loaded by Spark's own class loader)."""
    java = _java()
    if java is None:
        return None
    spark_jars = _spark_jars()
    # the JVM compares class path entries by path: another venv's pyspark is another class path
    parts = [str(java), str(java.stat().st_mtime_ns), str(spark_jars), jars_signature(spark_jars),
             conf.get(_CLASS_PATH, ""), conf.get("spark.jars", ""), f"training {TRAINING_VERSION}"]
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return jars.cache_dir() / "cds" / f"driver-{digest}.jsa"


def jars_signature(folder: Path) -> str:
    """The jars of `folder` as the JVM checks them when it maps an archive: name, mtime, size."""
    if not folder.is_dir():
        return ""
    entries = []
    for jar in sorted(folder.glob("*.jar")):
        stat = jar.stat()
        entries.append(f"{jar.name} {stat.st_mtime_ns} {stat.st_size}")
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


def _spark_jars() -> Path:
    import pyspark

    return (Path(pyspark.__file__).parent / "jars").resolve()


def source_text() -> str:
    """What an archive's `.source` file records: the jars folder, the training version and the
    jars' signature."""
    spark_jars = _spark_jars()
    return f"{spark_jars}\ntraining {TRAINING_VERSION}\n{jars_signature(spark_jars)}\n"


def forget_stale_archives(folder: Path) -> None:
    """Delete the archives made for a pyspark that is gone (a removed venv or clone) or was
    installed again since (other jar mtimes: the JVM would refuse the archive), and this
    install's archives of another training pass: each archive has a `.source` file naming the
    jars folder it was made for, its training version and the jars' signature. Another live
    install's archive of another training pass stays: that checkout's code still maps it (the
    cache is shared by every clone and worktree of the machine), and its own `make` replaces it."""
    mine = _spark_jars()
    for source in folder.glob("*.jsa.source"):
        lines = source.read_text(encoding="utf-8").splitlines()
        jars_folder = Path(lines[0].strip()) if lines else None
        gone = jars_folder is None or not jars_folder.is_dir()
        replaced = not gone and lines[2:3] != [jars_signature(jars_folder)]
        retrained = lines[1:2] != [f"training {TRAINING_VERSION}"] and jars_folder == mine
        if gone or replaced or retrained:
            source.with_suffix("").unlink(missing_ok=True)
            source.unlink(missing_ok=True)


def add_archive(conf: dict[str, str]) -> Path | None:
    """Add `-XX:SharedArchiveFile` to the driver's Java options in `conf` when an archive for
    this JVM and class path exists (and MIRRORSPEC_CDS allows it); returns the archive used."""
    setting = mode()
    if setting == "off" or "SharedArchiveFile" in conf.get(JAVA_OPTIONS, "") \
            or "ArchiveClassesAtExit" in conf.get(JAVA_OPTIONS, ""):
        return None
    path = archive_path(conf)
    if path is None or not path.is_file():
        return None
    share = "-Xshare:on" if setting == "require" else "-Xshare:auto"
    prepend_option(conf, f"-XX:SharedArchiveFile={path} {share}")
    return path


def prepend_option(conf: dict[str, str], option: str) -> None:
    existing = conf.get(JAVA_OPTIONS, "").strip()
    conf[JAVA_OPTIONS] = f"{option} {existing}".strip()
