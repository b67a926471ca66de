"""A stand-in for pyspark's spark-submit, for the warm-server tests that need no JVM: it reads
the properties file twice (as the launcher and then SparkSubmit do), records what it was given
(its arguments, environment and conf) in $FAKE_OUT/<pid>.json, and then behaves as the file
$FAKE_OUT/mode says: `listen` (the conf's port, as the Connect server), `hang` (never answers),
`wait` (listens once $FAKE_OUT/go exists) or `exit` (fails at once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

FAKE = r'''
import json, os, re, socket, sys, time

args = sys.argv[1:]
source = args[args.index("--properties-file") + 1]
texts = []
for _ in range(2):  # the launcher reads it, then SparkSubmit reads it again
    with open(source, encoding="utf-8") as handle:
        texts.append(handle.read())
conf = {}
for line in texts[1].splitlines():
    key, value = re.split(r"(?<!\\)=", line, maxsplit=1)
    unescape = lambda text: re.sub(r"\\(.)", r"\1", text)
    conf[unescape(key)] = unescape(value)
out = os.environ["FAKE_OUT"]
with open(os.path.join(out, f"{os.getpid()}.tmp"), "w", encoding="utf-8") as handle:
    json.dump({"argv": sys.argv, "env": dict(os.environ), "conf": conf,
               "read_twice": texts[0] == texts[1] != ""}, handle)
os.replace(os.path.join(out, f"{os.getpid()}.tmp"), os.path.join(out, f"{os.getpid()}.json"))
with open(os.path.join(out, "mode"), encoding="utf-8") as handle:
    mode = handle.read().strip()
print("fake server", mode, flush=True)
if mode == "exit":
    sys.exit(1)
if mode == "wait":
    while not os.path.exists(os.path.join(out, "go")):
        time.sleep(0.05)
if mode in ("listen", "wait"):
    listener = socket.socket()
    try:
        listener.bind((conf["spark.connect.grpc.binding.address"],
                       int(conf["spark.connect.grpc.binding.port"])))
    except OSError as exc:
        print(f"cannot bind: {exc}", flush=True)
        sys.exit(1)
    listener.listen()
while True:
    time.sleep(3600)
'''


def make_spark_home(folder: Path) -> Path:
    """A folder whose bin/spark-submit is the stand-in."""
    script = folder / "bin" / "spark-submit"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\n{FAKE}", encoding="utf-8")
    script.chmod(0o755)
    return folder


def records(out: Path) -> list[dict]:
    """What each launched stand-in recorded."""
    return [json.loads(p.read_text()) for p in sorted(out.glob("[0-9]*.json"))]


# A `spark start` as a process of its own (signals, two at once): argv = spark home, conf JSON,
# timeout. It prints SAY lines, then DONE <pid> <started now>, or INTERRUPTED.
DRIVER = """
import json, sys
from pathlib import Path
from mirrorspec.spark.platform import warm_server as ws
ws._spark_home = lambda: Path(sys.argv[1])
try:
    ready, started = ws.start(json.loads(sys.argv[2]), "local[*]", "shop (shop.dev)",
                              timeout=float(sys.argv[3]),
                              say=lambda note: print("SAY", note, flush=True))
    print("DONE", ready.pid, started, flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
    sys.exit(130)
"""


def start_driver(home: Path, conf: dict, env: dict, timeout: float = 120) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(home), json.dumps(conf),
                             str(timeout)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for(condition, what: str, seconds: float = 60.0):
    """Poll `condition` until it is truthy (an event to wait for, not a timing)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state != "Z"
