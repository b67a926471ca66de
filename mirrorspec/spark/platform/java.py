"""The Java that Spark will start: found as pyspark's launcher finds it, its version checked.

pyspark runs `$JAVA_HOME/bin/java`, else `java` on PATH; without one (or with Java older than 17,
which Spark 4 refuses) the JVM dies at start and pyspark reports a gateway error after seconds.
`check_java()` says so first, as a SetupError naming the fix. Pure Python: no pyspark import.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from mirrorspec.base.errors import SetupError

MIN_JAVA = 17
TESTED_JAVA = (17, 21)  # the versions Spark 4.1 documents
_INSTALL_HINT = ("install a Java 17 or 21 runtime (e.g. apt-get install openjdk-17-jre-headless) "
                 "and/or set JAVA_HOME to its folder")


@dataclass(frozen=True)
class JavaInfo:
    executable: str
    version: str   # as `java -version` prints it, e.g. "17.0.15"
    major: int
    source: str    # "JAVA_HOME" or "PATH"


def find_java() -> tuple[str | None, str]:
    """(the java executable pyspark will run or None, where it came from)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return (candidate if os.access(candidate, os.X_OK) else None), "JAVA_HOME"
    return shutil.which("java"), "PATH"


def java_info() -> JavaInfo:
    """The Java Spark will start, with its version; SetupError when there is none."""
    executable, source = find_java()
    if executable is None:
        where = (f"JAVA_HOME={os.environ.get('JAVA_HOME')} has no bin/java"
                 if source == "JAVA_HOME" else "no `java` on PATH and JAVA_HOME is not set")
        raise SetupError(f"Spark needs Java, and none was found ({where})", hint=_INSTALL_HINT)
    try:
        result = subprocess.run([executable, "-version"], capture_output=True, text=True,
                                timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{executable} -version failed: {exc}", hint=_INSTALL_HINT) from None
    text = result.stderr + result.stdout
    match = re.search(r'version "([^"]+)"', text)
    if result.returncode != 0 or match is None:
        first = text.strip().splitlines()[0] if text.strip() else f"exit {result.returncode}"
        raise SetupError(f"{executable} -version did not say its version: {first}",
                         hint=_INSTALL_HINT)
    version = match.group(1)
    return JavaInfo(executable, version, java_major(version), source)


def java_major(version: str) -> int:
    """17 for "17.0.15", 8 for "1.8.0_392"."""
    parts = version.split(".")
    major = int(re.match(r"\d+", parts[0]).group(0)) if re.match(r"\d+", parts[0]) else 0
    if major == 1 and len(parts) > 1 and parts[1].isdigit():
        return int(parts[1])
    return major


def check_java() -> JavaInfo:
    """The Java Spark will start, refused (SetupError) when missing or older than MIN_JAVA."""
    info = java_info()
    if info.major < MIN_JAVA:
        raise SetupError(f"Spark 4 needs Java {MIN_JAVA} or later; {info.executable} (from "
                         f"{info.source}) is Java {info.version}", hint=_INSTALL_HINT)
    return info
