"""Which `Host` a local server answers: the DNS-rebinding rule of `docs serve` and `serve`.

A web page whose own name re-resolves to 127.0.0.1 reaches a loopback server with its name in
`Host`; refusing names the server was not given stops it. IP literals always pass: a browser
sends one only when it connected to that address.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Iterable


def allowed_hosts(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names a `Host` header may carry for a server bound to `host`, plus `extra`."""
    names = {"localhost", host.lower(), *(name.lower().rstrip(".") for name in extra)}
    if host in ("", "0.0.0.0", "::"):  # every interface: the machine's own names too
        names.update({socket.gethostname().lower(), socket.getfqdn().lower()})
    return frozenset(names)


def host_name(header: str) -> str:
    """The name in a `Host` value: lower case, without port, brackets or a trailing dot."""
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8080
        return header[1:header.find("]")] if "]" in header else header
    name = header.rsplit(":", 1)[0] if header.count(":") == 1 else header
    return name.rstrip(".")


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether a request's `Host` header names this server (HTTP/1.0 may omit it)."""
    if header is None:
        return True
    name = host_name(header)
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return name in allowed
