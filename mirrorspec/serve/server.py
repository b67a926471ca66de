"""The endpoint's lifecycle: bind (127.0.0.1 by default), TLS per connection in its own thread,
count in-flight requests, log refusals and conformance findings, stop cleanly.

`Endpoint(config, log).start()` serves in a background thread; `stop()` stops accepting,
lets in-flight requests finish (up to `grace` seconds), drops uncommitted uploads and writes
the conformance report. `log(level, message, **fields)` is the command's console.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from mirrorspec.security.redact import redact_fields, redact_text
from mirrorspec.serve import monitoring
from mirrorspec.serve.conformance import Conformance
from mirrorspec.serve.endpoints import served_hosts
from mirrorspec.serve.handler import Handler
from mirrorspec.serve.names import Names
from mirrorspec.serve.persist import log_discarded, state_path
from mirrorspec.serve.store import MAX_BLOB_SIZE, Store
from mirrorspec.artifacts.status import process_alive

DEFAULT_PAGE_SIZE = 5000  # ABFS's fs.azure.list.max.results and ADLS's maximum
DEFAULT_MAX_BODY = 4000 << 20  # ADLS's largest append (4000 MiB)
IDLE_TIMEOUT = 120.0  # seconds a connection may sit silent (keep-alive, slow bodies)


@dataclass(frozen=True)
class Config:
    names: Names
    landing: Path
    warehouse: Path
    host: str = "127.0.0.1"
    port: int = 0
    unflushed: str = "visible"
    page_size: int = DEFAULT_PAGE_SIZE
    require_auth: bool = False
    max_body: int = DEFAULT_MAX_BODY
    max_blob_size: int = MAX_BLOB_SIZE
    tls: ssl.SSLContext | None = None
    ca_file: Path | None = None
    report: Path | None = None
    log_requests: bool = False
    allowed_hosts: frozenset[str] = served_hosts("127.0.0.1")


Log = Callable[..., None]


class OneLakeServer(ThreadingHTTPServer):
    """ThreadingHTTPServer whose TLS handshake runs in the connection's thread."""

    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 256  # socketserver's default of 5 resets bursts of clients

    def __init__(self, config: Config, store: Store, conformance: Conformance, log: Log):
        self.config, self.store, self.conformance, self.log = config, store, conformance, log
        self.names = config.names
        self._in_flight = 0
        self._idle = threading.Condition()
        super().__init__((config.host, config.port), Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(IDLE_TIMEOUT)
        if self.config.tls is not None:
            try:
                request = self.config.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as exc:
                self.log("warning", f"TLS handshake with {client_address[0]} failed: {exc}")
                request.close()
                return
        self.RequestHandlerClass(request, client_address, self)

    def begin_request(self) -> None:
        with self._idle:
            self._in_flight += 1

    def end_request(self, handler: Handler, seconds: float) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()
        # counted in the report of the item the request addressed (`serve --root`: its view)
        getattr(handler.server, "conformance", self.conformance).requests += 1
        if not handler.logged:  # no answer was sent (the client went away)
            self.log_request(handler, seconds)

    def log_request(self, handler: Handler, seconds: float) -> None:
        """One line per request, written before its answer is sent (so a client that has its
        answer finds the line): refusals always, the rest with --log-requests."""
        handler.logged = True
        status, code = handler.status, handler.error_code
        path = redact_text(handler.path)
        line = f"{handler.method} {path} -> {status}"
        fields = {"method": handler.method, "path": path, "status": status,
                  "seconds": round(seconds, 4)}
        form = handler.rename_form
        if form:
            fields["rename_source_form"] = form
        # a read of a missing path is how clients probe (exists(), _last_checkpoint): not a refusal
        probe = handler.method in ("HEAD", "GET") and status == 404
        if code and not probe:
            reason = getattr(handler, "error_message", "")
            self.log("warning", f"{line} {code}: {reason}", error_code=code, **fields)
        elif self.config.log_requests:
            self.log("info", line + (f" {code}" if code else "")
                     + (f" (rename source form: {form})" if form else ""), **fields)

    def wait_idle(self, timeout: float) -> bool:
        """True once no request is in flight (False when `timeout` passes first)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True


def redacting(log: Log) -> Log:
    """`log` with credentials taken out of the message and every field (mirrorspec.security.redact)."""
    def write(level: str, message: str, **fields: Any) -> None:
        log(level, redact_text(message), **redact_fields(fields))
    return write


class Endpoint:
    """A running (or ready to run) endpoint and its URLs."""

    def __init__(self, config: Config, log: Log):
        self.config = config
        self.log = log = redacting(log)
        landing = config.landing.resolve()
        _remove_dead_staging(landing)
        self.staging = _staging_beside(landing)
        self.store = Store(config.names, landing, config.warehouse, self.staging,
                           lambda: monitoring.render(str(config.warehouse)), config.unflushed,
                           state_path(landing), config.max_blob_size)
        log_discarded(self.store.state, log)
        self.conformance = Conformance(landing, config.report, log)
        try:
            self.httpd = OneLakeServer(config, self.store, self.conformance, log)
        except OSError as exc:
            self.store.close()
            from mirrorspec.base.errors import MirrorspecError

            raise MirrorspecError(f"can't listen on {config.host}:{config.port}: {exc}",
                                  hint="choose another --port (0 picks a free one)") from None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = str(self.httpd.server_address[0]), self.httpd.server_address[1]
        scheme = "https" if self.config.tls else "http"
        return f"{scheme}://{host}:{port!s}"

    @property
    def account_url(self) -> str:
        return self.url + "/onelake"

    @property
    def landing_zone_url(self) -> str:
        names = self.config.names
        return f"{self.account_url}/{names.workspace}/{names.item_path}/Files/LandingZone"

    def ready_doc(self) -> dict[str, Any]:
        names = self.config.names
        return {"url": self.url, "account_url": self.account_url,
                "landing_zone_url": self.landing_zone_url,
                "ca_file": str(self.config.ca_file) if self.config.ca_file else None,
                "workspace": names.workspace, "workspace_id": names.workspace_id,
                "item": names.item_path, "item_id": names.item_id,
                "token_url": self.url + "/msi/token",
                "imds_token_url": self.url + "/metadata/identity/oauth2/token",
                "pid": os.getpid()}

    def start(self) -> None:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="onelake-serve",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()

    def stop(self, grace: float = 10.0) -> bool:
        """Stop accepting, let in-flight requests finish; True when none was cut off."""
        self.httpd.shutdown()
        finished = self.httpd.wait_idle(grace)
        self.httpd.server_close()
        self.store.close()
        self.conformance.close()
        return finished


def _staging_beside(landing: Path) -> Path:
    """The folder where uncommitted bytes wait: beside the landing zone, so the engine never
    lists it and clients never see it, on the same filesystem, so a flush is one rename.

    A landing zone that is a mount point (or under a parent serve can't write) can't have one:
    that is a clear error at start, not a failed flush later."""
    from mirrorspec.base.errors import MirrorspecError

    staging = landing.parent / f".{landing.name}.serve-staging-{os.getpid()}"
    hint = ("serve stages uploads in a folder beside the landing zone, on the same filesystem "
            "(a flush publishes with one rename): give a landing zone that is a folder inside "
            "a writable folder of its filesystem, not a mount point")
    try:
        landing.mkdir(parents=True, exist_ok=True)
        staging.mkdir(exist_ok=True)
        same = staging.stat().st_dev == landing.stat().st_dev
    except OSError as exc:
        raise MirrorspecError(f"can't create the staging folder {staging}: "
                              f"{exc.strerror or exc}", hint=hint) from None
    if not same:
        staging.rmdir()
        raise MirrorspecError(f"the landing zone {landing} is a mount point: the staging folder "
                              f"{staging} beside it is on another filesystem", hint=hint)
    return staging


def _remove_dead_staging(landing: Path) -> None:
    """Staging folders left by a `serve` that was killed (their uploads were never flushed)."""
    for folder in landing.parent.glob(f".{landing.name}.serve-staging-*"):
        pid = folder.name.rpartition("-")[2]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def write_ready_file(path: Path, doc: dict[str, Any]) -> None:
    """Atomically: a reader sees no file or the whole JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)

