"""The names `serve` answers to, and what each routes to.

Besides its bound address and `localhost`, `serve` answers the real service's host names, so a
client whose base URL can't be changed reaches it through /etc/hosts or a proxy: the DFS host
speaks the DFS dialect, the Blob host the Blob dialect, the Fabric API host (`/v1`) and the
Entra ID host reach the dispatcher's services. `--allow-host` adds aliases; one shaped like a OneLake host
(`<region->onelake.dfs.…`, `onelake.blob.…`) is routed as that host is. Any other name is
refused (mirrorspec.security.hosts: the DNS-rebinding rule).
"""

from __future__ import annotations

from typing import Iterable

from mirrorspec.security.hosts import allowed_hosts

DFS_HOST = "onelake.dfs.fabric.microsoft.com"
BLOB_HOST = "onelake.blob.fabric.microsoft.com"
API_HOST = "api.fabric.microsoft.com"
LOGIN_HOST = "login.microsoftonline.com"  # Entra ID (entra.py), reached through proxy.py too
FABRIC_HOSTS = (LOGIN_HOST, DFS_HOST, BLOB_HOST, API_HOST)
LOCAL_NAMES = ("127.0.0.1", "localhost", "::1")


def served_hosts(bind: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """Every name a `Host` header may carry (IP literals pass besides)."""
    return allowed_hosts(bind, (*FABRIC_HOSTS, *extra))


def certificate_names(bind: str, extra: Iterable[str] = ()) -> list[str]:
    """The names a self-signed certificate carries: the bound address, localhost, the real
    service's names and the aliases."""
    names = [bind, *LOCAL_NAMES, *FABRIC_HOSTS, *(e.lower().rstrip(".") for e in extra)]
    return list(dict.fromkeys(names))


def kind_of(name: str) -> str | None:
    """'dfs', 'blob' or 'api' for a host name shaped like the real service's, else None
    (path-style: the dialect comes from the request)."""
    labels = name.lower().split(".")
    if len(labels) >= 3 and labels[0].endswith("onelake") and labels[1] in ("dfs", "blob"):
        return labels[1]
    if len(labels) >= 3 and labels[0] == "api":
        return "api"
    return None
