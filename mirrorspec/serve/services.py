"""What `serve` answers besides storage, and how storage requests find their item: Entra ID
(entra.py), Fabric's REST API under `/v1` (fabric_api.py), bearer-token checks (tokens.py) and
the per-item view of the server (items.py).

`attach(endpoint, …)` hangs a `Services` on the endpoint's HTTP server; the handler asks it
first (`answer`), checks bearer tokens with it (`authorize_storage`) and takes the server view
of the item a storage path names (`server_for`).
"""

from __future__ import annotations

import json
from typing import Any

from mirrorspec.serve import origin, proxy
from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.entra import Entra, Reply, oauth_error
from mirrorspec.serve.fabric_api import MAX_BODY, FabricApi, error
from mirrorspec.serve.managed_identity import Gate, Identity
from mirrorspec.serve.items import FabricError, Item, Registry, Workspace
from mirrorspec.serve.names import Names
from mirrorspec.serve.tokens import (FABRIC_AUDIENCES, LOCAL_ISSUER, STORAGE_AUDIENCES,
                                     TokenAuthority, TokenRefused)

FORM_LIMIT = 64 << 10
# the schemes --require-auth lets through to storage: a bearer token is verified, SharedKey
# (and its Lite form) only required to be present; a SAS comes in the query (`sig=`)
STORAGE_SCHEMES = ("bearer", "sharedkey", "sharedkeylite")
FABRIC_CHALLENGE = ('Bearer realm="", authorization_uri="https://login.microsoftonline.com/'
                    'common/oauth2/authorize", error="invalid_token"')


class ItemServer:
    """The server as one item's requests see it: that item's names, store and conformance;
    everything else is the real server's."""

    def __init__(self, base: Any, item: Item):
        self.base = base
        self.names, self.store, self.conformance = item.names, item.store, item.conformance

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


class NoItemNames(Names):
    """The names of a workspace that holds no mirrored database yet: no item segment is one."""

    def is_item(self, segment: str) -> bool:
        return False

    @property
    def item_path(self) -> str:
        return "no mirrored database yet"


class EmptyWorkspaceServer(ItemServer):
    """A workspace created through `/v1` with no item: its own paths answer (an empty listing),
    every path below it is an item that is not found."""

    def __init__(self, base: Any, ws: Workspace):
        self.base = base
        self.names = NoItemNames(ws.name, ws.id, "", "")
        self.store, self.conformance = base.store, base.conformance


class HostedWorkspaces:
    """`is_workspace` over the start workspace and every one the registry holds (a storage
    path may start with any of them instead of the account)."""

    def __init__(self, names: Any, registry: Registry):
        self.names, self.registry = names, registry

    def is_workspace(self, segment: str) -> bool:
        if self.names.is_workspace(segment):
            return True
        try:
            self.registry.workspace(segment)
        except FabricError:
            return False
        return True


class Services:
    def __init__(self, registry: Registry, authority: TokenAuthority, entra: Entra,
                 require_auth: bool, page_size: int, identity_gate: Gate | None = None):
        self.registry = registry
        self.tokens = authority
        self.entra = entra
        self.fabric = FabricApi(registry, page_size)
        self.require_auth = require_auth
        self.identity_gate = identity_gate or Gate({}, registered=bool(entra.clients))

    # --- the handler's hooks ----------------------------------------------------------------
    def answer(self, handler: Any, segments: list[str]) -> bool:
        """Answer an Entra or `/v1` request (True), or leave it to storage (False). A OneLake
        host name (`onelake.dfs.…`, `onelake.blob.…`) is storage whatever its path: a workspace
        may be named like an API route there."""
        if handler.host_kind in ("dfs", "blob"):
            return False
        fabric = bool(segments) and segments[0] == "v1"
        if not fabric and not self.entra.owns(segments):
            return False
        problem = origin.cross_site_problem(handler.headers, handler.headers.get("Host") or "",
                                            _scheme(handler))
        if problem is not None:
            handler.close_connection = True  # the body (a page's) is left unread
            _send(handler, error(403, "Forbidden", problem) if fabric else oauth_error(
                400, "invalid_request", 9002326, "Cross-origin token redemption is permitted "
                "only for the 'Single-Page Application' client-type."))
            return True
        if fabric:
            reply = self._fabric(handler, segments[1:])
        else:
            limit = FORM_LIMIT if handler.method == "POST" else 0
            form = handler.body_bytes(limit) if limit else b""
            reply = self.entra.answer(handler.method, segments, handler.query, form,
                                      _base_url(handler))
        _send(handler, reply)
        return True

    def _fabric(self, handler: Any, rest: list[str]) -> Reply:
        if self.require_auth:
            refusal = self._check_fabric_token(handler.headers.get("Authorization") or "")
            if refusal is not None:
                return refusal
        body = handler.body_bytes(MAX_BODY) if handler.method in ("POST", "PATCH", "PUT") \
            else b""
        problem = origin.json_body_problem(handler.headers.get("Content-Type"), body)
        if problem is not None:
            return error(415, "UnsupportedMediaType", problem)
        base = _base_url(handler)
        return self.fabric.answer(handler.method, rest, handler.query, body, base,
                                  base + "/onelake")

    def _check_fabric_token(self, header: str) -> Reply | None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            reply = error(401, "Unauthorized", "send an Entra ID bearer token for "
                          "https://api.fabric.microsoft.com (serve runs with --require-auth)")
        else:
            try:
                self.tokens.verify(token.strip(), FABRIC_AUDIENCES)
                return None
            except TokenRefused as exc:
                code = "TokenExpired" if "expired" in exc.reason else "InvalidToken"
                reply = error(401, code, exc.reason)
        return Reply(reply.status, reply.body, (("WWW-Authenticate", FABRIC_CHALLENGE),))

    def authorize_storage(self, header: str | None) -> None:
        """With --require-auth: a bearer token must be one serve issued for storage. Without
        registered applications, SharedKey and a SAS are only required to be present
        (docs/onelake.md) and any other scheme (`Basic …`) is Azure's 400
        InvalidAuthenticationInfo (the header is not in a format it reads). With `--client` or
        `--managed-identity`, only those applications may get in: a request without one of
        serve's bearer tokens (SharedKey, a SAS, `Basic …`) is 401 InvalidAuthenticationInfo."""
        scheme, _, token = (header or "").strip().partition(" ")
        if self.identity_gate.registered and scheme.lower() != "bearer":
            shown = f"scheme {scheme[:20]!r}" if header else "a SAS"
            raise ServeError("invalid_auth", "Server failed to authenticate the request: serve "
                             "runs with registered applications (--client/--managed-identity), "
                             f"so only a bearer token it issued is accepted ({shown})")
        if header is None:
            return
        if scheme.lower() not in STORAGE_SCHEMES:
            raise ServeError("auth_format", "Authentication information is not given in the "
                             "correct format. Check the value of Authorization header "
                             f"(scheme {scheme[:20]!r}: Bearer or SharedKey).")
        if scheme.lower() != "bearer":
            return
        try:
            self.tokens.verify(token.strip(), STORAGE_AUDIENCES)
        except TokenRefused as exc:
            raise ServeError("invalid_auth", "Server failed to authenticate the request. "
                             f"Please refer to the information in the www-authenticate header. "
                             f"{exc.reason}") from None

    def managed_identity_token(self, resource: str, subject: str) -> tuple[str, int]:
        """A token for `/msi/token` and the IMDS route (managed_identity.py says who may have
        one), signed like the Entra ones."""
        issued = self.tokens.issue(resource, LOCAL_ISSUER, subject)
        return issued.token, issued.expires_on

    def server_for(self, server: Any, segments: list[str]) -> Any:
        """The view of `server` bound to the item that workspace-level `segments` name (the
        real server for the item the endpoint was started with, or an unknown one)."""
        base = getattr(server, "base", server)
        if not segments:
            return base
        try:
            ws = self.registry.workspace(segments[0])
            items = self.registry.items_of(ws)
            if not items:
                return EmptyWorkspaceServer(base, ws)
            item = self.registry.item(ws, segments[1]) if len(segments) > 1 else items[0]
        except FabricError:
            return base  # place_of answers FilesystemNotFound / PathNotFound
        if item.store is None or item.store is base.store:
            return base
        return ItemServer(base, item)

    def servers_under(self, server: Any, segments: list[str]) -> list[Any]:
        """The item views whose stores hold what `segments` name: the one item a path below
        an item names, or every item of a workspace (a listing of the workspace itself)."""
        base = getattr(server, "base", server)
        if len(segments) == 1:
            try:
                items = self.registry.items_of(self.registry.workspace(segments[0]))
            except FabricError:
                return [self.server_for(base, segments)]
            return [base if item.store is base.store else ItemServer(base, item)
                    for item in items if item.store is not None]
        return [self.server_for(base, segments)]

    def workspace_names(self) -> list[str]:
        """Every workspace served (List Filesystems, List Containers), by display name."""
        return sorted((ws.name for ws in self.registry.all_workspaces()), key=str.lower)

    def workspaces(self, names: Any) -> "HostedWorkspaces":
        """The account-less path check over every workspace (`names`: the start one's)."""
        return HostedWorkspaces(names, self.registry)

    def connect(self, handler: Any) -> None:
        """A CONNECT: a tunnel served here for Microsoft's hosts (proxy.py), else 403."""
        context = handler.server.config.tls
        target = handler.path
        if context is None or not proxy.intercepted(target):
            reason = (f"CONNECT {target}: serve answers only {', '.join(proxy.HOSTS)} (port 443), "
                      "itself, and only over TLS (--self-signed); it forwards nothing")
            handler.server.log("warning", reason, method="CONNECT", path=target, status=403)
            handler.close_connection = True
            handler.send_error(403, "Forbidden", reason)
            return
        if handler.server.config.log_requests:
            handler.server.log("info", f"CONNECT {target} -> 200 (answered here)",
                               method="CONNECT", path=target, status=200)
        handler.close_connection = True
        handler.send_response(200, "Connection Established")
        handler.end_headers()
        proxy.tunnel(handler, context)

    def close(self) -> None:
        self.registry.close()


def _scheme(handler: Any) -> str:
    return "https" if handler.server.config.tls else "http"


def _base_url(handler: Any) -> str:
    return f"{_scheme(handler)}://{handler.headers.get('Host') or '127.0.0.1'}"


def _send(handler: Any, reply: Reply) -> None:
    headers = dict(reply.headers)
    if reply.status >= 400 and isinstance(reply.body, dict):
        handler.error_code = str(reply.body.get("errorCode") or reply.body.get("error") or "")
        handler.error_message = str(reply.body.get("message")
                                    or reply.body.get("error_description") or "")
    if reply.body is None:
        handler.respond(reply.status, headers)
        return
    headers["Content-Type"] = "application/json; charset=utf-8"
    handler.respond(reply.status, headers, json.dumps(reply.body).encode())


def attach(endpoint: Any, registry: Registry, clients: dict | None = None,
           identities: dict[str, Identity] | None = None) -> Services:
    """Services for `endpoint` (before it starts); the handler finds them on its server.
    With `clients` or `identities`, only those get tokens (managed_identity.py)."""
    authority = TokenAuthority()
    gate = Gate(identities or {}, registered=bool(clients) or bool(identities))
    services = Services(registry, authority, Entra(authority, clients),
                        endpoint.config.require_auth, endpoint.config.page_size, gate)
    endpoint.httpd.services = services
    return services

