"""`make test-clients`: official Azure clients, unmodified, against `mirrorspec serve
--self-signed`, each with its own credential (the SDKs' DefaultAzureCredential and azcopy's MSI
login take their token from the endpoint's managed-identity route, `IDENTITY_ENDPOINT`; rclone
uses a container SAS), each running a publisher's everyday steps.

The clients come from their own registries into a cache (MIRRORSPEC_CLIENTS_CACHE, default
~/.cache/mirrorspec/clients): the Java SDK from Maven Central, the JS SDK from npm, the Go SDK
from the Go module proxy, azcopy from npm, rclone from Debian's apt (and, with
MIRRORSPEC_CLIENTS_RCLONE_GO=1, built from the Go module proxy). A missing toolchain, or a
registry that can't be reached, is a skip that names it; a driver that doesn't build fails. The small driver programs beside this file are ours; they call the SDKs'
public APIs only. Each prints `STEP <name> ok` or `STEP <name> FAIL <why>`; this file then checks
the bytes on disk (sha256 against the source) and prints the step matrix.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests.support.onelake_server import OneLakeServe

pytestmark = [pytest.mark.clients, pytest.mark.skipif(
    os.environ.get("MIRRORSPEC_TEST_CLIENTS") != "1",
    reason="installs Azure clients from their registries: run `make test-clients`")]

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("MIRRORSPEC_CLIENTS_CACHE", "~/.cache/mirrorspec/clients")).expanduser()
BIG_MIB = int(os.environ.get("MIRRORSPEC_CLIENTS_BIG_MIB", "256"))
LISTED = 5100  # past one 5,000-entry page
ITEM = "db.MountedRelationalDatabase"
STEPS = ("create-table", "temp-rename", "list-paged", "read-full", "read-range",
         "properties-metadata", "overwrite", "if-none-match", "upload-big", "concurrent-16",
         "lease", "delete-recursive", "monitoring")
# a client's own steps besides those (its driver prints them)
OWN_STEPS = {"azcopy": ("sync-changed-only", "remove-blob-endpoint")}


class InstallFailed(Exception):
    """A registry download failed (no network, a version gone): the client is skipped."""


def run(command: list[str], cwd: Path | None = None, env: dict | None = None,
        timeout: float = 1800, install: bool = True) -> str:
    """An install step (InstallFailed) or a build of our driver (AssertionError) on failure."""
    done = subprocess.run(command, cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        why = f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-4000:]}"
        if install:
            raise InstallFailed(why)
        raise AssertionError(why)
    return done.stdout


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"no {', '.join(missing)} on PATH (the toolchain this client needs)")


# --- one builder per client: install into the cache, answer (command, extra env) --------------

def java(endpoint: OneLakeServe) -> tuple[list[str], dict[str, str]]:
    return [*java_runner(endpoint), "Publisher"], {}


def java_runner(endpoint: OneLakeServe) -> list[str]:
    """`java` with the SDK's classpath, our driver classes and the endpoint's CA trusted (the
    main class is the caller's: Publisher, PublishTable)."""
    need("java", "javac", "mvn", "keytool")
    home = CACHE / "java"
    home.mkdir(parents=True, exist_ok=True)
    classpath = home / "classpath.txt"
    run(["mvn", "-B", "-q", "-s", "settings.xml", f"-Dmaven.repo.local={CACHE / 'm2'}",
         "dependency:build-classpath",
         f"-Dmdep.outputFile={classpath}"], cwd=HERE / "java")
    classes = home / "classes"
    run(["javac", "-d", str(classes), "-cp", classpath.read_text().strip(),
         *sorted(str(p) for p in (HERE / "java").glob("*.java"))], install=False)
    store = home / "truststore.p12"
    store.unlink(missing_ok=True)
    run(["keytool", "-importcert", "-noprompt", "-alias", "mirrorspec-serve", "-file",
         endpoint.ready["ca_file"], "-keystore", str(store), "-storetype", "PKCS12",
         "-storepass", "changeit"], install=False)
    return ["java", f"-Djavax.net.ssl.trustStore={store}", "-Djavax.net.ssl.trustStorePassword="
            "changeit", "-Djavax.net.ssl.trustStoreType=PKCS12", "-cp",
            f"{classes}:{classpath.read_text().strip()}"]


def go(endpoint: OneLakeServe) -> tuple[list[str], dict[str, str]]:
    need("go")
    binary = CACHE / "go" / "publisher"
    run(["go", "mod", "download"], cwd=HERE / "go", env=go_env())
    run(["go", "build", "-o", str(binary), "."], cwd=HERE / "go", env=go_env(), install=False)
    return [str(binary)], {"SSL_CERT_FILE": endpoint.ready["ca_file"]}


def go_env() -> dict[str, str]:
    return {"GOPATH": str(CACHE / "go" / "path"), "GOMODCACHE": str(CACHE / "go" / "mod"),
            "GOCACHE": str(CACHE / "go" / "build"), "GOFLAGS": "-modcacherw",
            "GOTOOLCHAIN": "local"}


def js(endpoint: OneLakeServe) -> tuple[list[str], dict[str, str]]:
    need("node", "npm")
    home = CACHE / "js"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "js" / "package.json", home / "package.json")
    run(["npm", "install", "--no-audit", "--no-fund", "--omit=dev"], cwd=home)
    return (["node", str(HERE / "js" / "publisher.cjs")],
            {"NODE_EXTRA_CA_CERTS": endpoint.ready["ca_file"], "NODE_PATH": str(home / "node_modules")})


def azcopy(endpoint: OneLakeServe) -> tuple[list[str], dict[str, str]]:
    need("npm")
    home = CACHE / "azcopy"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "azcopy" / "package.json", home / "package.json")
    run(["npm", "install", "--no-audit", "--no-fund"], cwd=home)
    binary = next((home / "node_modules" / "@azure-tools" / "azcopy-linux").rglob("azcopy_linux_*"))
    binary.chmod(0o755)
    missing = [line.split()[0] for line in run(["ldd", str(binary)]).splitlines() if "not found" in line]
    if missing:
        pytest.skip(f"azcopy needs {', '.join(missing)} (apt-get install libsecret-1-0)")
    return ([sys.executable, str(HERE / "azcopy_driver.py")],
            {"MS_AZCOPY": str(binary), "SSL_CERT_FILE": endpoint.ready["ca_file"]})


def rclone(endpoint: OneLakeServe) -> tuple[list[str], dict[str, str]]:
    need("rclone")  # Debian's: apt-get install rclone
    return ([sys.executable, str(HERE / "rclone_driver.py")],
            {"SSL_CERT_FILE": endpoint.ready["ca_file"]})


RCLONE_GO = "v1.76.0"


def rclone_go(endpoint: OneLakeServe) -> tuple[list[str], dict[str, str]]:
    """rclone built from the Go module proxy (a long build: only when asked for)."""
    need("go")
    binary = CACHE / "rclone" / "rclone"
    if not binary.exists():
        if os.environ.get("MIRRORSPEC_CLIENTS_RCLONE_GO") != "1":
            pytest.skip(f"rclone {RCLONE_GO} is built from the Go module proxy only with "
                        "MIRRORSPEC_CLIENTS_RCLONE_GO=1 (a long build)")
        run(["go", "install", f"github.com/rclone/rclone@{RCLONE_GO}"],
            env={**go_env(), "GOBIN": str(binary.parent)}, timeout=3600)
    return ([sys.executable, str(HERE / "rclone_driver.py")],
            {"SSL_CERT_FILE": endpoint.ready["ca_file"], "MS_RCLONE": str(binary),
             "MS_RCLONE_ENV_AUTH": "1"})


DRIVERS: dict[str, Callable[[OneLakeServe], tuple[list[str], dict[str, str]]]] = {
    "java": java, "go": go, "js": js, "azcopy": azcopy, "rclone": rclone, "rclone-go": rclone_go,
}


# --- the endpoint, the sources, the checks -----------------------------------------------------

@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sources")
    (folder / "_metadata.json").write_bytes(b'{"keyColumns": ["id"]}\n')
    (folder / "small.bin").write_bytes(os.urandom(300_000))
    (folder / "small2.bin").write_bytes(os.urandom(70_000))
    with open(folder / "big.bin", "wb") as handle:
        for _ in range(BIG_MIB):
            handle.write(os.urandom(1 << 20))
    return folder


def sha(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def disk_checks(landing: Path, client: str, src: Path) -> dict[str, str]:
    """What each step must have left on disk: "" when it did, else why not."""
    table = landing / f"{client}.schema" / "orders"

    def same(rel: str, source: str) -> str:
        path = table / rel
        if not path.is_file():
            return f"{rel} is not on disk"
        return "" if sha(path) == sha(src / source) else f"{rel} differs from {source}"

    concurrent = [same(f"c{i:02d}.bin", "small2.bin") for i in range(16)]
    return {
        "create-table": same("_metadata.json", "_metadata.json"),
        "temp-rename": same("00000000000000000001.parquet", "small.bin")
        or ("the temporary name is still there" if list(table.glob("_tmp*")) else ""),
        "overwrite": same("data.csv", "small2.bin"),
        "if-none-match": same("data.csv", "small2.bin"),
        "upload-big": same("big.bin", "big.bin"),
        "concurrent-16": next((c for c in concurrent if c), ""),
        "delete-recursive": deleted(table.parent / "scratch", client),
    }


def deleted(folder: Path, client: str) -> str:
    """rclone (1.60, no directory markers) deletes the files and leaves the folders, as it would
    on a real hierarchical namespace; every other client deletes the folder."""
    if any(p.is_file() for p in folder.rglob("*")):
        return f"files are left under {folder.name}/"
    return f"{folder.name}/ is still there" if folder.exists() and not client.startswith("rclone") else ""


@pytest.mark.parametrize("client", sorted(DRIVERS))
def test_client_runs_the_publisher_steps(client, tmp_path, sources):
    endpoint = OneLakeServe(tmp_path, "--self-signed", "--workspace", "ws", "--item", "db")
    try:
        big = endpoint.landing / f"{client}.schema" / "big"
        big.mkdir(parents=True)
        for i in range(LISTED):
            (big / f"{i:020d}.parquet").write_bytes(b"")
        try:
            command, env = DRIVERS[client](endpoint)
        except InstallFailed as exc:
            pytest.skip(f"{client}: could not install the client: {exc}")
        done = subprocess.run(command, env={
            **os.environ, **env,
            "IDENTITY_ENDPOINT": endpoint.ready["token_url"], "IDENTITY_HEADER": "any",
            "MS_ACCOUNT_URL": endpoint.ready["account_url"], "MS_WS": "ws", "MS_ITEM": ITEM,
            "MS_CLIENT": client, "MS_SRC": str(sources), "MS_LISTED": str(LISTED)},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
        steps = {name: "not run" for name in (*STEPS, *OWN_STEPS.get(client, ()))}
        for line in done.stdout.splitlines():
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[0] == "STEP" and parts[1] in steps:
                why = parts[3] if len(parts) > 3 else parts[2]
                steps[parts[1]] = {"ok": "", "skip": f"n/a: {why}"}.get(parts[2], f"FAIL {why}")
        for name, why in disk_checks(endpoint.landing, client, sources).items():
            if not steps[name] and why:
                steps[name] = f"FAIL on disk: {why}"
    finally:
        endpoint.stop()
    matrix = {name: ("ok" if not why else why) for name, why in steps.items()}
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / f"matrix-{client}.json").write_text(json.dumps(matrix, indent=1) + "\n")
    print(f"\n{client}: " + ", ".join(f"{n}={v.split(':')[0] if v != 'ok' else v}"
                                       for n, v in matrix.items()))
    failed = {n: v for n, v in matrix.items() if v != "ok" and not v.startswith("n/a")}
    assert not failed, f"{client} exited {done.returncode}; failed steps: " + json.dumps(
        failed, indent=1) + "\n" + done.stdout[-3000:]
