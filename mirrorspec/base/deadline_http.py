"""HTTP/1.1 requests bounded in total time (stdlib only), for the clients that call a server
from inside a pass: the OpenLineage client (`observe/delivery.py`) and the schema-registry
client (`sources/avro_schemas.py`).

A server that answers one byte every few seconds stays under any per-read timeout; here every
step of a request (connect, TLS, send, each read of the status line, the headers and the body)
gets only what is left of one deadline, so a request takes at most `seconds` in all. Redirects
are never followed (the caller sees the 3xx), and credentials in the URL (`user:pw@`) are never
sent: a caller that wants them sends its own `Authorization` header.
"""

from __future__ import annotations

import http.client
import io
import os
import socket
import ssl
import time
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urlsplit

MAX_BODY = 16 * 1024 * 1024  # an answer larger than this is refused, never held whole


class RequestError(OSError):
    """The URL is not http(s), or the answer is not HTTP (or larger than allowed)."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Message
    body: bytes


def request(method: str, url: str, seconds: float, headers: dict[str, str] | None = None,
            body: bytes = b"", read_body: bool = True, max_body: int = MAX_BODY) -> Answer:
    """Send one request within `seconds` in total; the answer's status, headers and (when
    `read_body`) body. Raises TimeoutError when the deadline passes, RequestError, or another
    OSError (refused, unreachable, TLS)."""
    deadline = time.monotonic() + seconds
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestError(f"not an http(s) URL: {parts.scheme}://{parts.hostname or ''}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    sock = socket.create_connection((parts.hostname, port), timeout=_left(deadline))
    try:
        if parts.scheme == "https":
            sock.settimeout(_left(deadline))
            sock = tls_context().wrap_socket(sock, server_hostname=parts.hostname)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = parts.netloc.rsplit("@", 1)[-1]  # never the user-info
        head = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close",
                *(f"{k}: {v}" for k, v in (headers or {}).items())]
        if body or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body)}")
        sock.settimeout(_left(deadline))
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        response = http.client.HTTPResponse(_DeadlineSocket(sock, deadline),
                                            method=method)
        try:
            response.begin()
            data = response.read(max_body + 1) if read_body else b""
        except http.client.HTTPException as exc:
            raise RequestError(f"the answer is not HTTP ({type(exc).__name__})") from None
        if len(data) > max_body:
            raise RequestError(f"the answer is larger than {max_body} bytes")
        return Answer(response.status, response.msg, data)
    finally:
        sock.close()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the server did not answer in time")
    return left


class _DeadlineSocket:
    """What http.client reads an answer from: the socket, each read given only what is left
    of the deadline."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str = "rb", *args: object, **kwargs: object) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


class _DeadlineReader(io.RawIOBase):
    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self._sock.settimeout(_left(self._deadline))
        return self._sock.recv_into(buffer)


def tls_context() -> ssl.SSLContext:
    """Certificates checked against what Python HTTP clients built on requests trust (the
    openlineage-python client's transport): REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE, else
    certifi's bundle, else the system's."""
    cafile = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if not cafile:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:
            cafile = None
    return ssl.create_default_context(cafile=cafile)
