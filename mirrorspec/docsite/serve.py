"""Serve the generated site on localhost with the standard library's HTTP server.

Two checks beyond the standard handler (security.md): a request whose `Host` header names
another machine is refused (403), so a web page can't reach the site through DNS rebinding
(its own name resolving to 127.0.0.1); and nothing is served through a symbolic link inside the
site folder (404), so a link there can't publish a file from elsewhere.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import socket
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def allowed_hosts(host: str) -> frozenset[str]:
    """The names a `Host` header may carry for a server bound to `host` (IP literals are
    always accepted: a browser sends one only when it connected to that address)."""
    names = {"localhost", host.lower()}
    if host in ("", "0.0.0.0", "::"):  # every interface: the machine's own names too
        names.update({socket.gethostname().lower(), socket.getfqdn().lower()})
    return frozenset(names)


def _host_name(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8080
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether a request's `Host` header names this server (HTTP/1.0 may omit it)."""
    if header is None:
        return True
    name = _host_name(header).rstrip(".")
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return name in allowed


class _SiteHandler(SimpleHTTPRequestHandler):
    allowed: frozenset[str] = frozenset()

    def log_message(self, format: str, *args: Any) -> None:
        return None  # no per-request noise on stderr

    def send_head(self) -> Any:
        if not host_allowed(self.headers.get("Host"), self.allowed):
            self.send_error(403, "Host not allowed",
                            "this server answers only requests for the address it listens on")
            return None
        if self._through_link(self.translate_path(self.path)):
            self.send_error(404, "File not found")
            return None
        return super().send_head()

    def _through_link(self, path: str) -> bool:
        root = Path(self.directory)
        try:
            parts = Path(path).relative_to(root).parts
        except ValueError:
            return True
        current = root
        for part in parts:
            current = current / part
            if os.path.islink(current):
                return True
        return False


def make_server(site_dir: str | Path, host: str = "127.0.0.1", port: int = 8080
                ) -> ThreadingHTTPServer:
    """An HTTP server for `site_dir` (port 0 picks a free port: see `server.server_address`)."""
    handler_class = type("SiteHandler", (_SiteHandler,), {"allowed": allowed_hosts(host)})
    handler = functools.partial(handler_class, directory=str(site_dir))
    return ThreadingHTTPServer((host, port), handler)
