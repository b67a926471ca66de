"""Serve the generated site on localhost with the standard library's HTTP server."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:
        return None  # no per-request noise on stderr


def make_server(site_dir: str | Path, host: str = "127.0.0.1", port: int = 8080
                ) -> ThreadingHTTPServer:
    """An HTTP server for `site_dir` (port 0 picks a free port: see `server.server_address`)."""
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    return ThreadingHTTPServer((host, port), handler)
