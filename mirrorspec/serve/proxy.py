"""`serve` as the HTTPS proxy of a publisher that must run with no edit: a `CONNECT` to one of
Microsoft's hosts below (port 443) is answered by `serve` itself, never forwarded. The tunnel's
TLS is terminated with the `--self-signed` certificate (which names these hosts), and the
requests inside it are served like any other: `login.microsoftonline.com` by the Entra ID
endpoints, `onelake.*` as storage (a Host of `onelake.*` carries no account segment),
`api.fabric.microsoft.com` by `/v1`. Any other CONNECT is refused; nothing leaves the machine.

A client opts in with `HTTPS_PROXY=<serve url>` and trusts the CA (`REQUESTS_CA_BUNDLE`).
"""

from __future__ import annotations

import socket
import ssl
import threading
from typing import Any

from mirrorspec.serve.endpoints import FABRIC_HOSTS

HOSTS = FABRIC_HOSTS
CHUNK = 1 << 16


def intercepted(target: str) -> bool:
    """True for `host:443` of one of HOSTS (the CONNECT request's target)."""
    host, _, port = target.rpartition(":")
    return port == "443" and host.lower() in HOSTS


_HANDLERS: dict[type, type] = {}


def _tunnel_handler(base: type) -> type:
    """The server's handler class for a socket-pair end (no TCP options to set on it)."""
    if base not in _HANDLERS:
        _HANDLERS[base] = type(f"Tunnel{base.__name__}", (base,),
                               {"disable_nagle_algorithm": False})
    return _HANDLERS[base]


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass  # either side went away: the tunnel ends
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def tunnel(handler: Any, context: ssl.SSLContext) -> None:
    """After `200 Connection Established`: serve the tunnel's requests with a nested handler
    on a socket pair whose far end is pumped to and from the client's connection (which may be
    TLS itself: TLS in TLS)."""
    client = handler.connection
    inner, outer = socket.socketpair()
    pumps = [threading.Thread(target=_pump, args=pair, daemon=True, name="connect-tunnel")
             for pair in ((client, outer), (outer, client))]
    for pump in pumps:
        pump.start()
    server = getattr(handler.server, "base", handler.server)
    try:
        inner.settimeout(client.gettimeout())
        secure = context.wrap_socket(inner, server_side=True)
    except (ssl.SSLError, OSError) as exc:
        server.log("warning", f"TLS handshake inside the CONNECT tunnel to {handler.path} "
                   f"failed: {exc}")
        inner.close()
    else:
        try:
            _tunnel_handler(server.RequestHandlerClass)(secure, handler.client_address, server)
        finally:
            secure.close()
    finally:
        outer.close()
        for pump in pumps:
            pump.join(5)
