"""Serve the generated site on localhost with the standard library's HTTP server.

Two checks beyond the standard handler (security.md): a request whose `Host` header names
another machine is refused (403), so a web page can't reach the site through DNS rebinding
(its own name resolving to 127.0.0.1); and nothing is served through a symbolic link inside the
site folder (404), so a link there can't publish a file from elsewhere.
"""

from __future__ import annotations

import functools
import os
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mirrorspec.security.hosts import allowed_hosts, host_allowed

__all__ = ["allowed_hosts", "host_allowed", "make_server"]


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
