"""One HTTP request: parse, authorise, dispatch to the DFS or Blob operation, answer.

Dialect: a request with `comp=`, `restype=` or `x-ms-blob-type` is Blob-shaped (XML errors,
`BlobNotFound`), a HEAD without DFS parameters too; everything else is DFS-shaped (JSON errors).
A HEAD never has a body; every error carries `x-ms-error-code`.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any, BinaryIO, Iterator
from urllib.parse import parse_qsl, urlsplit

from mirrorspec.security.hosts import host_allowed, host_name
from mirrorspec.security.redact import redact_text
from mirrorspec.serve import endpoints, framing, managed_identity, origin, properties, wire
from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.listings import Listings, query_int
from mirrorspec.serve.names import (Place, decode_segments, parse_rename_source, place_of,
                                    source_url_segments, strip_account)
from mirrorspec.serve.store import Entry, same_etag

CHUNK = 1 << 20
_DFS_PARAMS = ("resource", "action", "upn", "directory", "recursive", "mode")
MAX_BLOCK_LIST = 8 << 20


class ClientGone(Exception):
    """The client closed the connection before sending the whole body."""


class Handler(Listings, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and a small body go out as two writes
    server_version = "mirrorspec-serve"
    sys_version = ""
    server: Any  # server.OneLakeServer (which imports this module)

    # --- plumbing ----------------------------------------------------------------------------
    def log_message(self, format: str, *args) -> None:
        pass  # the server logs each request itself (OneLakeServer.log)

    def parse_request(self) -> bool:
        self.expect_continue = False
        return super().parse_request()

    def finish(self) -> None:
        super().finish()  # the answer is out
        if self.close_connection and getattr(self, "body_left", 0):
            framing.linger(self.connection)

    def handle_expect_100(self) -> bool:
        """`Expect: 100-continue` is answered when the body is first read (`body`), once the
        request passed its checks: a refused one (413, a foreign Host, bad framing) gets its
        refusal, never `100 Continue` first."""
        self.expect_continue = True
        return True

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_CONNECT(self) -> None:  # serve as a publisher's HTTPS proxy (proxy.py)
        services = getattr(self.server, "services", None)
        if services is None:
            self.send_error(405, "CONNECT is answered only by `mirrorspec serve`")
            return
        services.connect(self)

    def _handle(self, method: str) -> None:
        self.server.begin_request()
        self.started = started = time.monotonic()
        self.method, self.raw_path, self.query, self.blob = method, self.path, {}, False
        self.host, self.host_kind = "", None
        self.body_left, self.chunked = 0, False
        self.status = 0
        self.error_code = ""
        self.rename_form: str | None = None
        self.logged = False
        try:
            try:
                self._read_request(method)
                self._dispatch()
            except ServeError as exc:
                self._refuse(exc)
            except ClientGone:
                self.close_connection = True
                self.status, self.error_code = 499, "ClientDisconnected"
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            except FileNotFoundError:  # moved away mid-request (the engine, a client)
                self._refuse_unless_answered(ServeError(
                    "path_not_found", f"{self.raw_path}: a file moved away while the request ran",
                    blob="blob_not_found"))
            except OSError as exc:
                self._refuse_unless_answered(ServeError(
                    "internal_error", f"{type(exc).__name__}: {exc.strerror or exc}"))
            except Exception as exc:  # noqa: BLE001 - answered 500 and logged, never a dropped connection
                self._refuse_unless_answered(ServeError("internal_error", f"{exc!r}"))
            finally:
                if self.body_left:
                    self.close_connection = True  # an unread body can't be skipped safely
        finally:
            self.server.end_request(self, time.monotonic() - started)

    def _read_request(self, method: str) -> None:
        """Framing, Host and target, checked before anything else (a refusal here closes the
        connection when the body's end is unknown)."""
        try:
            length = framing.body_length(self.headers.get_all("Content-Length") or [],
                                         self.headers.get_all("Transfer-Encoding") or [])
        except framing.FramingError as exc:
            self.body_left = 1  # where this request ends is unknown: close after the answer
            raise ServeError("invalid_header", str(exc)) from None
        self.chunked = length == framing.CHUNKED
        self.body_left = 1 if self.chunked else length  # chunked: nonzero until its last chunk
        if self.headers.defects:  # a header line email.parser could not read (`Name : v`, …)
            self.body_left = self.body_left or 1
            raise ServeError("invalid_header", "a header line is malformed (no 'Name: value')")
        target = self._check_host()
        override = self.headers.get("X-HTTP-Method-Override")
        self.method = override.upper() if override and method in ("PUT", "POST") else method
        path, _, query = target.partition("?")
        self.raw_path = path.partition("#")[0]
        self.query = {k.lower(): v for k, v in parse_qsl(query, keep_blank_values=True)}
        self.blob = (self.host_kind == "blob" or self.host_kind != "dfs" and (
            "comp" in self.query or "restype" in self.query or "x-ms-blob-type" in self.headers
            or (self.method == "HEAD" and not any(p in self.query for p in _DFS_PARAMS))))

    def _check_host(self) -> str:
        """The request target in origin form, once its Host (and an absolute-form target's
        authority) names this server: a foreign name is DNS rebinding or a proxy request."""
        hosts = self.headers.get_all("Host") or []
        target = self.path
        if len(hosts) > 1:
            raise ServeError("invalid_header", "the request has several Host headers")
        if not hosts and self.request_version >= "HTTP/1.1":
            raise ServeError("invalid_header", "an HTTP/1.1 request needs a Host header")
        names = [hosts[0]] if hosts else []
        if not target.startswith("/"):
            url = urlsplit(target)
            if url.scheme.lower() not in ("http", "https") or not url.netloc:
                raise ServeError("invalid_uri", f"the request target {target[:80]!r} is neither "
                                 "a path nor an http(s) URL")
            names.append(url.netloc.rpartition("@")[2])
            target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        allowed = self.server.config.allowed_hosts
        for name in names:
            if not host_allowed(name, allowed):
                raise ServeError("host_not_allowed", f"Host {name[:80]!r} is not a name this "
                                 "endpoint serves (give it with --allow-host if it should be)")
        self.host = host_name(names[-1]) if names else ""
        self.host_kind = endpoints.kind_of(self.host)
        return target

    def body(self, limit: int | None = None) -> Iterator[bytes]:
        """The request body in chunks (never all in memory); ClientGone on a short body."""
        cap = self.server.config.max_body if limit is None else limit
        if not self.chunked and self.body_left > cap:
            raise ServeError("body_too_large", f"the body of {self.body_left} bytes is over the "
                             f"limit of {cap} bytes")
        if self.expect_continue and self.body_left:
            self.expect_continue = False
            self.send_response_only(100)
            self.end_headers()
        if self.chunked:
            yield from self._chunked_body(cap)
            return
        while self.body_left > 0:
            chunk = self.rfile.read(min(CHUNK, self.body_left))
            if not chunk:
                raise ClientGone()
            self.body_left -= len(chunk)
            yield chunk

    def _chunked_body(self, cap: int) -> Iterator[bytes]:
        """Transfer-Encoding: chunked (clients that stream a body of unknown length)."""
        total = 0
        try:
            while True:
                size = framing.chunk_size(self._line())
                if size == 0:
                    for _ in range(framing.MAX_TRAILERS + 1):
                        if self._line() in (b"\r\n", b"\n"):
                            break  # trailer fields are ignored
                    else:
                        raise framing.FramingError("the chunked body has too many trailer lines")
                    self.body_left = 0
                    return
                total += size
                if total > cap:
                    raise ServeError("body_too_large", f"the chunked body is over the limit of "
                                     f"{cap} bytes")
                while size > 0:
                    chunk = self.rfile.read(min(CHUNK, size))
                    if not chunk:
                        raise ClientGone()
                    size -= len(chunk)
                    yield chunk
                framing.chunk_end(self._line())
        except framing.FramingError as exc:
            raise ServeError("invalid_input", str(exc)) from None

    def _line(self) -> bytes:
        line = self.rfile.readline(framing.MAX_LINE + 1)
        if not line:
            raise ClientGone()
        return line

    def body_bytes(self, limit: int) -> bytes:
        return b"".join(self.body(limit))

    def drain(self) -> None:
        """Read and drop a body the operation ignores (keeps the connection usable)."""
        for _chunk in self.body(1 << 20):
            pass

    def respond(self, status: int, headers: dict[str, str] | None = None,
                body: bytes | BinaryIO | None = None, length: int | None = None) -> None:
        self.status = status
        self.server.log_request(self, time.monotonic() - self.started)
        self.send_response(status)
        version = self.headers.get("x-ms-version") or wire.DEFAULT_VERSION
        base = {"x-ms-request-id": str(uuid.uuid4()), "x-ms-version": version}
        client_id = self.headers.get("x-ms-client-request-id")
        if client_id:
            base["x-ms-client-request-id"] = client_id
        base.update(headers or {})
        if isinstance(body, bytes):
            length = len(body)
        base["Content-Length"] = str(length or 0)
        for key, value in base.items():
            self.send_header(key, value)
        self.end_headers()
        if self.method == "HEAD" or body is None:
            return
        if isinstance(body, bytes):
            self.wfile.write(body)
            return
        remaining = length or 0
        while remaining > 0:
            chunk = body.read(min(CHUNK, remaining))
            if not chunk:
                break
            self.wfile.write(chunk)
            remaining -= len(chunk)

    def _refuse_unless_answered(self, exc: ServeError) -> None:
        if self.status:  # the answer had started: all that is left is to drop the connection
            self.close_connection = True
            self.error_code = exc.code_for(self.blob).code
            self.error_message = redact_text(exc.message)
            return
        self._refuse(exc)

    def _refuse(self, exc: ServeError) -> None:
        code = exc.code_for(self.blob)
        self.error_code = code.code
        self.error_message = message = redact_text(exc.message)
        headers = {"x-ms-error-code": code.code, **exc.headers}
        if code.status == 401:
            headers["WWW-Authenticate"] = ("Bearer authorization_uri=https://login.microsoftonline"
                                           ".com/common/oauth2/authorize resource_id="
                                           "https://storage.azure.com")
        if self.method == "HEAD":
            self.respond(code.status, headers)
            return
        body, content_type = wire.error_body(code, message, self.blob)
        headers["Content-Type"] = content_type
        self.respond(code.status, headers, body)

    # --- routing -----------------------------------------------------------------------------
    def _dispatch(self) -> None:
        services = getattr(self.server, "services", None)  # Entra ID, /v1, items (services.py)
        if services is not None and services.answer(self, decode_segments(self.raw_path)):
            return
        problem = origin.cross_site_problem(self.headers, self.headers.get("Host") or "",
                                            "https" if self.server.config.tls else "http")
        if problem is not None:
            raise ServeError("cross_site", problem)
        if self.host_kind not in ("dfs", "blob") and managed_identity.is_route(self.raw_path) \
                and self.method in ("GET", "POST"):
            managed_identity.answer(self)
            return
        if self.server.config.require_auth:
            authorization = self.headers.get("Authorization")
            if not (authorization or "sig" in self.query):
                raise ServeError("no_auth", "this endpoint runs with --require-auth: send a "
                                 "bearer token, a SharedKey signature or a SAS")
            if services is not None:
                services.authorize_storage(authorization)  # None: a SAS
        segments = decode_segments(self.raw_path)
        if self.host_kind not in ("dfs", "blob"):  # a OneLake host name carries the account
            # a path may start with a workspace instead of the account (the JS SDK's renames)
            known = services.workspaces(self.server.names) if services is not None else \
                self.server.names
            segments = strip_account(segments, self.host, known)
        if services is not None:  # the item the path names, when serve hosts several
            self.server = services.server_for(self.server, segments)
        place = place_of(segments, self.server.names)
        if place.item:
            self.server.conformance.item_segment(place.item)
        self.segments = segments
        action = self.query.get("action", "").lower()
        if action in ("setaccesscontrol", "setaccesscontrolrecursive"):
            raise ServeError("acl_rejected", "OneLake rejects access-control changes "
                             "(Fabric permissions apply)")
        operation = {"HEAD": self._head, "GET": self._get, "PUT": self._put,
                     "PATCH": self._patch, "DELETE": self._delete}.get(self.method)
        if operation is None:
            raise ServeError("unsupported", f"{self.method} is not an operation of this endpoint")
        operation(place)

    # --- HEAD / GET ---------------------------------------------------------------------------
    def _head(self, place: Place) -> None:
        if self._account_info():
            return
        entry = self.server.store.stat(place)
        if entry is None:
            raise ServeError("path_not_found", f"{place.ws_path} does not exist", blob="blob_not_found")
        headers = self._entry_headers(place, entry)
        if self.query.get("action", "").lower() == "getaccesscontrol":
            headers["x-ms-acl"] = "user::rwx,group::r-x,other::---"
        self.respond(200, headers, length=entry.size)

    def _account_info(self) -> bool:
        """Get Account Information (`?restype=account&comp=properties`), on any path."""
        if (self.query.get("restype", "").lower(), self.query.get("comp", "").lower()) != (
                "account", "properties"):
            return False
        self.respond(200, {"x-ms-sku-name": "Standard_RAGRS", "x-ms-account-kind": "StorageV2",
                           "x-ms-is-hns-enabled": "true"})
        return True

    def _get(self, place: Place) -> None:
        if self._account_info():
            return
        if place.area == "account":
            self._list_workspaces()
            return
        if self.query.get("restype", "").lower() == "container":
            if self.query.get("comp", "").lower() == "list":
                self._list_blobs(place)
            else:
                self.respond(200, {"ETag": '"0x8D0000000000000"',
                                   "Last-Modified": wire.http_date(self.server.store.started)})
            return
        if self.query.get("resource", "").lower() == "filesystem":
            self._list_paths(place)
            return
        comp = self.query.get("comp", "").lower()
        if comp == "metadata":  # Get Blob Metadata: HEAD's answer without the body
            entry = self.server.store.stat(place)
            if entry is None:
                raise ServeError("path_not_found", f"{place.ws_path} does not exist",
                                 blob="blob_not_found")
            headers = self._entry_headers(place, entry)
            self.respond(200, {k: v for k, v in headers.items()
                               if k.lower().startswith(properties.META_PREFIX) or k == "ETag"
                               or k == "Last-Modified"})
            return
        if comp:
            raise ServeError("unsupported", f"comp={self.query['comp']} is not emulated")
        self._read(place)

    def _read(self, place: Place) -> None:
        entry, content = self.server.store.open_read(place)
        try:
            if_match = self.headers.get("If-Match")
            if if_match and not same_etag(if_match, entry.etag):
                raise ServeError("condition_not_met", f"{place.ws_path}: If-Match {if_match} does "
                                 f"not match {entry.etag}")
            span = self.headers.get("x-ms-range") or self.headers.get("Range")
            headers = self._entry_headers(place, entry)
            size = entry.size
            if not span:
                self.respond(200, headers, content, length=size)
                return
            start, end = _parse_range(span, size)
            if isinstance(content, bytes):
                content = content[start:end + 1]
            else:
                content.seek(start)
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
            blob_md5 = headers.pop("Content-MD5", None)  # the blob's MD5 is not the range's
            if blob_md5:
                headers["x-ms-blob-content-md5"] = blob_md5
            if (self.headers.get("x-ms-range-get-content-md5") or "").lower() == "true":
                content = _range_with_md5(content, end - start + 1, headers)
            self.respond(206, headers, content, length=end - start + 1)
        finally:
            if not isinstance(content, bytes):
                content.close()

    # --- PUT / PATCH / DELETE -------------------------------------------------------------
    def _put(self, place: Place) -> None:
        store, conformance = self.server.store, self.server.conformance
        if "x-ms-rename-source" in self.headers:
            self.drain()
            self._rename(place)
            return
        resource = self.query.get("resource", "").lower()
        comp = self.query.get("comp", "").lower()
        if resource == "filesystem" or self.query.get("restype", "").lower() == "container":
            self.drain()
            if place.area == "workspace" and not comp:
                # the served workspace exists; any other is refused in place_of
                raise ServeError("filesystem_exists", f"the workspace {place.workspace!r} "
                                 "already exists", blob="container_exists")
            raise ServeError("managed_folder", "workspaces can't be created or changed here")
        if resource == "directory":
            self.drain()
            etag = store.create_dir(place, self.headers.get("If-None-Match"))
            self._created(etag)
            return
        if resource == "file":
            self.drain()
            self._check_lease(place)
            conformance.before_publish(place)  # before the create truncates a _metadata.json
            etag = store.create_file(place, self.headers.get("If-Match"),
                                     self.headers.get("If-None-Match"),
                                     properties.from_request(self.headers, "dfs"))
            conformance.created(place, visible=not store.hidden)
            self._created(etag)
            return
        if comp in ("metadata", "properties"):
            self.drain()
            self._check_lease(place)
            self._check_conditions(place)
            if comp == "metadata":
                etag = store.set_properties(place, metadata=properties.metadata_of(self.headers))
            else:
                etag = store.set_properties(place, props=properties.from_request(self.headers,
                                                                                 "blob"))
            self._created(etag, status=200)
            return
        if comp == "lease":
            self.drain()
            self._lease(place)
            return
        if comp == "block":
            block_id = self.query.get("blockid", "")
            if not block_id:
                raise ServeError("invalid_query", "Put Block needs blockid=")
            self._check_lease(place)
            store.blocks.put(place, block_id, self.body())
            self.respond(201, {"x-ms-request-server-encrypted": "true"})
            return
        if comp == "blocklist":
            try:
                ids = wire.parse_block_list(self.body_bytes(MAX_BLOCK_LIST))
            except ValueError as exc:
                raise ServeError("invalid_block_list", str(exc)) from None
            self._check_lease(place)
            conformance.before_publish(place)
            etag = store.blocks.commit(place, ids, self.headers.get("If-Match"),
                                       self.headers.get("If-None-Match"),
                                       properties.from_request(self.headers, "blob"))
            self._published(place)
            self._created(etag)
            return
        if comp:
            raise ServeError("unsupported", f"comp={comp} is not emulated")
        if "x-ms-copy-source" in self.headers:
            self.drain()
            self._copy(place)
            return
        if "x-ms-blob-type" in self.headers:
            self._check_lease(place)
            conformance.before_publish(place)
            largest = min(self.server.config.max_body, store.max_blob_size)
            etag = store.put_blob(place, self.body(largest), self.headers.get("If-Match"),
                                  self.headers.get("If-None-Match"),
                                  properties.from_request(self.headers, "put-blob"),
                                  properties.md5_header(self.headers.get("Content-MD5")))
            self._published(place)
            self._created(etag)
            return
        raise ServeError("unsupported", "a PUT needs resource=, x-ms-rename-source, comp=, "
                         "x-ms-copy-source or x-ms-blob-type")

    def _created(self, etag: str, status: int = 201) -> None:
        self.respond(status, {"ETag": f'"{etag}"', "Last-Modified": wire.http_date(time.time()),
                              "x-ms-request-server-encrypted": "true"})

    def _published(self, place: Place) -> None:
        entry = self.server.store.stat(place)
        if entry is not None and not entry.is_dir:
            self.server.conformance.published(place, entry.size)

    def _check_lease(self, place: Place, header: str = "x-ms-lease-id") -> None:
        """412 when a lease guards `place` and the request does not hold it."""
        if place.area == "landing":
            self.server.store.leases.check_write(place.rel, self.headers.get(header))

    def _check_conditions(self, place: Place) -> None:
        """If-Match / If-None-Match on an operation that changes an existing path."""
        entry = self.server.store.stat(place)
        if entry is None:
            raise ServeError("path_not_found", f"{place.ws_path} does not exist",
                             blob="blob_not_found")
        if_match, if_none = self.headers.get("If-Match"), self.headers.get("If-None-Match")
        if (if_match and not same_etag(if_match, entry.etag)) or (
                if_none and same_etag(if_none, entry.etag)):
            raise ServeError("condition_not_met", f"{place.ws_path}: the condition on its ETag "
                             f"{entry.etag} is not met")

    def _lease(self, place: Place) -> None:
        """Lease Blob: acquire, renew, change, release, break."""
        store = self.server.store
        store.writable(place, "lease")
        entry = store.stat(place)
        if entry is None or entry.is_dir:
            raise ServeError("path_not_found", f"{place.ws_path} does not exist",
                             blob="blob_not_found")
        self._check_conditions(place)
        h = self.headers
        status, headers = store.leases.act(
            place.rel, (h.get("x-ms-lease-action") or "").lower(), h.get("x-ms-lease-id"),
            h.get("x-ms-proposed-lease-id"), h.get("x-ms-lease-duration"),
            h.get("x-ms-lease-break-period"))
        headers.update({"ETag": f'"{entry.etag}"', "Last-Modified": wire.http_date(entry.mtime)})
        self.respond(status, headers)

    def _copy(self, dest: Place) -> None:
        """Copy Blob / Copy Blob From URL within this endpoint: done before the answer, so the
        status is `success` at once (no polling)."""
        raw = self.headers["x-ms-copy-source"]
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        try:
            source = place_of(source_url_segments(raw, host, self.server.names), self.server.names)
        except ServeError as exc:
            if exc.key in ("filesystem_not_found", "item_not_found"):
                raise ServeError("copy_source_missing", f"copy source {raw!r}: {exc.message}") \
                    from None
            raise
        self._check_lease(dest)
        copy_id = str(uuid.uuid4())
        # the source without its query: a SAS signature is a secret, never echoed or kept
        copied = {"x-ms-copy-id": copy_id, "x-ms-copy-status": "success",
                  "x-ms-copy-source": raw.partition("?")[0],
                  "x-ms-copy-completion-time": wire.http_date(time.time())}
        self.server.conformance.before_publish(dest)
        etag = self.server.store.copy(source, dest, self.headers.get("If-Match"),
                                      self.headers.get("If-None-Match"),
                                      properties.metadata_of(self.headers), copied)
        self._published(dest)
        self.respond(202, {"ETag": f'"{etag}"', "Last-Modified": wire.http_date(time.time()),
                           "x-ms-copy-id": copy_id, "x-ms-copy-status": "success"})

    def _rename(self, dest: Place) -> None:
        raw = self.headers["x-ms-rename-source"]
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        source_segments, form = parse_rename_source(raw, host, self.server.names)
        self.rename_form = form
        try:
            source = place_of(source_segments, self.server.names)
        except ServeError as exc:
            if exc.key in ("filesystem_not_found", "item_not_found"):
                self.server.conformance.rename_source_missing(source_segments, dest, raw)
                raise ServeError("source_not_found", f"rename source {raw!r} does not exist: "
                                 f"{exc.message}") from None
            raise
        self._check_lease(source, "x-ms-source-lease-id")
        self._check_lease(dest)
        store = self.server.store
        self.server.conformance.before_publish(dest)
        try:
            etag = store.rename(source, dest, self.headers.get("If-None-Match"),
                                self.headers.get("If-Match"))
        except ServeError as exc:
            if exc.key == "source_not_found":
                self.server.conformance.rename_source_missing(source_segments, dest, raw)
            raise
        self._published(dest)
        self._created(etag)

    def _patch(self, place: Place) -> None:
        action = self.query.get("action", "").lower()
        store = self.server.store
        if action == "append":
            position = _position(self.query, store.max_blob_size)
            self._check_lease(place)
            upload = store.append(place, position, self.body())
            if self.query.get("flush", "").lower() == "true":
                self.server.conformance.before_publish(place)
                etag = store.flush(place, upload.length, None, None)
                self._published(place)
                self.respond(200, {"ETag": f'"{etag}"', "Last-Modified": wire.http_date(time.time()),
                                   "x-ms-request-server-encrypted": "true"})
                return
            self.respond(202, {"x-ms-request-server-encrypted": "true"})
            return
        if action == "flush":
            self.drain()
            position = _position(self.query, store.max_blob_size)
            self._check_lease(place)
            retain = self.query.get("retainuncommitteddata", "").lower() == "true"
            self.server.conformance.before_publish(place)
            etag = store.flush(place, position, self.headers.get("If-Match"),
                               self.headers.get("If-None-Match"), retain,
                               properties.from_request(self.headers, "dfs"))
            self._published(place)
            self._created(etag, status=200)
            return
        raise ServeError("unsupported", f"PATCH action={action or '(none)'} is not emulated")

    def _delete(self, place: Place) -> None:
        if self.query.get("resource", "").lower() == "filesystem" or \
                self.query.get("restype", "").lower() == "container":
            raise ServeError("managed_folder", "workspaces can't be created or deleted here")
        self.drain()
        self._check_lease(place)
        recursive = self.query.get("recursive", "").lower() == "true"
        dfs = any(k in self.query for k in ("recursive", "paginated", "continuation"))
        self.server.conformance.before_delete(place)  # a re-key by delete + upload is one too
        try:
            self.server.store.delete(place, recursive)
        except ServeError as exc:
            if exc.key == "directory_not_empty" and not dfs:
                self.blob = True  # Delete Blob's answer: DirectoryIsNotEmpty, an XML body
            raise
        # DFS Delete answers 200, Blob Delete 202 (the Blob SDK accepts only 202; the DFS SDK both)
        self.respond(200 if dfs else 202, {"x-ms-delete-type-permanent": "true"})

    def _entry_headers(self, place: Place, entry: Entry) -> dict[str, str]:
        """HEAD / GET headers: the entry's, its properties and metadata, its lease."""
        headers = wire.entry_headers(entry)
        headers.update(properties.response_headers(self.server.store.props_of(entry),
                                                   _content_type(place)))
        if place.area == "landing" and not entry.is_dir:
            headers.update(self.server.store.leases.headers(place.rel))
        return headers


def _range_with_md5(content: BinaryIO | bytes, length: int, headers: dict[str, str]) -> bytes:
    """The range's bytes, its MD5 in Content-MD5 (the service computes it up to 4 MiB)."""
    if length > 4 << 20:
        raise ServeError("out_of_range_md5", f"x-ms-range-get-content-md5 needs a range of at most "
                         f"4 MiB, not {length} bytes")
    data = content if isinstance(content, bytes) else content.read(length)
    headers["Content-MD5"] = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
    return data


def _content_type(place: Place) -> str:
    return "application/json" if place.area == "monitoring" else "application/octet-stream"


def _position(query: dict[str, str], largest: int) -> int:
    """`position=` of an append or flush: required, 0 up to the largest blob's size."""
    position = query_int(query, "position", None)
    if position > largest:
        raise ServeError("invalid_query", f"position={position} is past the largest blob "
                         f"({largest} bytes, --max-blob-size)")
    return position


def _parse_range(span: str, size: int) -> tuple[int, int]:
    """`bytes=a-b` / `bytes=a-` → (start, end inclusive); 416 when it starts past the end."""
    unit, _, spec = span.partition("=")
    start_text, _, end_text = spec.partition("-")
    try:
        if unit.strip() != "bytes" or not start_text.strip():
            raise ValueError
        start = int(start_text)
        end = int(end_text) if end_text.strip() else size - 1
    except ValueError:
        raise ServeError("invalid_header", f"the range {span!r} is not bytes=START-[END]") from None
    if start >= size or end < start:
        raise ServeError("invalid_range", f"the range {span!r} is not satisfiable for {size} bytes",
                         headers={"Content-Range": f"bytes */{size}"})
    return start, min(end, size - 1)

