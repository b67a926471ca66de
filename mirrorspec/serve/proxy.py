"""`serve` as the HTTPS proxy of a publisher that must run with no edit: a `CONNECT` to one of
Microsoft's hosts below (port 443) is answered by `serve` itself, never forwarded. The tunnel's
TLS is terminated with the `--self-signed` certificate (which names these hosts), and the
requests inside it are served like any other: `login.microsoftonline.com` by the Entra ID
endpoints, `onelake.*` as storage (a Host of `onelake.*` carries no account segment),
`api.fabric.microsoft.com` by `/v1`. Any other CONNECT is refused; nothing leaves the machine.

A client opts in with `HTTPS_PROXY=<serve url>` and trusts the CA (`REQUESTS_CA_BUNDLE`).
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from typing import Any

from mirrorspec.serve.endpoints import FABRIC_HOSTS

HOSTS = FABRIC_HOSTS
CHUNK = 1 << 14  # one TLS record
BUFFER = 1 << 20  # per direction, before reading pauses


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


class _Relay:
    """Copies bytes both ways between the client's connection and the tunnel's far end, in one
    thread: the client's connection is a TLS socket when serve runs HTTPS, and an OpenSSL
    connection must not be read in one thread while it is written in another (a pump thread
    per direction broke the client's TLS now and then under load: `SSLEOFError`)."""

    def __init__(self, client: socket.socket, outer: socket.socket, idle: float | None):
        self.client, self.outer, self.idle = client, outer, idle
        self.peer = {client: outer, outer: client}
        self.waiting = {client: bytearray(), outer: bytearray()}  # bytes to send to each end
        self.retry = {client: 0, outer: 0}  # a TLS write to retry with the same length
        self.open = {client: True, outer: True}  # not at its end of file yet

    def run(self) -> None:
        for end in self.peer:
            end.setblocking(False)
        try:
            while self._step():
                pass
        finally:
            _close(self.outer)  # the tunnel's handler reads an end of file: its connection ends

    def _step(self) -> bool:
        """One round of reads and writes; False once the tunnel is over."""
        both_open = self.open[self.client] and self.open[self.outer]
        if not both_open and not any(self.waiting.values()):
            return False
        reads = [end for end in self.peer
                 if both_open and len(self.waiting[self.peer[end]]) < BUFFER]
        writes = [end for end in self.peer if self.waiting[end]]
        decrypted = [end for end in reads if isinstance(end, ssl.SSLSocket) and end.pending()]
        if decrypted:  # TLS records already taken off the wire: select would not show them
            ready, writable = decrypted, []
        else:
            ready, writable, _ = select.select(reads, writes, [], self.idle)
            if not ready and not writable:
                return False  # idle past serve's limit
        for end in ready:
            self._read(end)
        return all(self._write(end) for end in writable)

    def _read(self, end: socket.socket) -> None:
        try:
            data = end.recv(CHUNK)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            return
        except OSError:
            data = b""
        if data:
            self.waiting[self.peer[end]] += data
        else:
            self.open[end] = False

    def _write(self, end: socket.socket) -> bool:
        size = self.retry[end] or min(len(self.waiting[end]), CHUNK)
        try:
            sent = end.send(self.waiting[end][:size])
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            self.retry[end] = size
            return True
        except OSError:
            return False  # the end went away
        self.retry[end] = 0
        del self.waiting[end][:sent]
        return True


def _close(*ends: socket.socket) -> None:
    for end in ends:
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already gone


def tunnel(handler: Any, context: ssl.SSLContext) -> None:
    """After `200 Connection Established`: serve the tunnel's requests with a nested handler
    on a socket pair whose far end is relayed to and from the client's connection (which may be
    TLS itself: TLS in TLS)."""
    client = handler.connection
    idle = client.gettimeout()
    inner, outer = socket.socketpair()
    relay = threading.Thread(target=_Relay(client, outer, idle).run, daemon=True,
                             name="connect-tunnel")
    relay.start()
    server = getattr(handler.server, "base", handler.server)
    try:
        inner.settimeout(idle)
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
        relay.join()  # it ends at the far end's end of file, after the last answer's bytes
        outer.close()
