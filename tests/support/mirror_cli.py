"""`mirrorspec mirror` as a subprocess for tests that need a real process (crash, watch, races)."""

from __future__ import annotations

import sys
from pathlib import Path

# C1 only, serial GC: a JVM that runs a few small jobs spends ~40% less CPU (JIT and GC
# threads). Not for the workers' shared sessions: over a whole module list C2 pays for itself.
SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SHORT_JVM_CONF = {"spark.driver.extraJavaOptions": SHORT_JVM_OPTIONS}


def mirror_args(landing: Path, warehouse: Path, *extra: str, master: str = "local[1]"
                ) -> list[str]:
    """The `mirror` arguments, tuned for a short-lived test JVM."""
    return ["mirror", "--landing-zone", str(landing), "--warehouse", str(warehouse),
            "--master", master, "--threads", "2",
            "--conf", "spark.sql.shuffle.partitions=1",
            "--conf", "spark.default.parallelism=1",
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.driver.extraJavaOptions={SHORT_JVM_OPTIONS}",
            *extra]


def mirror_command(landing: Path, warehouse: Path, *extra: str, master: str = "local[1]"
                   ) -> list[str]:
    """The full command line: the venv's `mirrorspec` script, else `python -m mirrorspec`."""
    script = Path(sys.executable).parent / "mirrorspec"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "mirrorspec"]
    return base + mirror_args(landing, warehouse, *extra, master=master)
