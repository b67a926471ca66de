"""The managed-identity token routes, and who may get a token from them.

- `/msi/token`: App Service's protocol, what `DefaultAzureCredential` (and the Java, Go and JS
  SDKs, azcopy's MSI login) call when `IDENTITY_ENDPOINT` and `IDENTITY_HEADER` are set. The
  client sends `IDENTITY_HEADER`'s value as `X-IDENTITY-HEADER` (App Service's guard against
  forged requests: a secret only the identity's process has).
- `/metadata/identity/oauth2/token`: IMDS's form, what ABFS's `MsiTokenProvider` calls. It
  carries no secret (`Metadata: true` only): the real IMDS trusts the virtual machine's network.

Open mode (no `--client`, no `--managed-identity`): any caller gets a token, as any credential
passes the rest of serve. Registered mode (`--client` or `--managed-identity` given): a token
goes only to a managed identity given as `--managed-identity ID:SECRET`, proved by
`X-IDENTITY-HEADER: SECRET` on `/msi/token`; the IMDS form, which cannot carry a secret, is
refused (ABFS then signs in as an application: `ClientCredsTokenProvider` against the Entra
endpoint, docs/onelake.md). Every refusal is 401 with an OAuth error body.
"""

from __future__ import annotations

import base64
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

APP_SERVICE_ROUTE = "/msi/token"
IMDS_ROUTE = "/metadata/identity/oauth2/token"
ROUTES = (APP_SERVICE_ROUTE, IMDS_ROUTE)
STORAGE = "https://storage.azure.com"
SECRET_HEADER = "X-IDENTITY-HEADER"
ANONYMOUS = "managed-identity"  # the subject of an open-mode token


@dataclass(frozen=True)
class Identity:
    """A managed identity `--managed-identity ID:SECRET` registers."""

    client_id: str
    secret: str


def parse_identities(values: Iterable[str]) -> dict[str, Identity]:
    """`--managed-identity` values → identities by client id (ValueError, never naming the
    secret, when one is not ID:SECRET)."""
    found: dict[str, Identity] = {}
    for value in values:
        client_id, sep, secret = value.partition(":")
        if not sep or not client_id.strip() or not secret:
            shown = repr(client_id.strip()) if sep else "value"
            raise ValueError(f"--managed-identity {shown}: give ID:SECRET")
        found[client_id.strip()] = Identity(client_id.strip(), secret)
    return found


def is_route(path: str) -> bool:
    return path.rstrip("/") in ROUTES


class Gate:
    """Who gets a managed-identity token (see the module docstring)."""

    def __init__(self, identities: dict[str, Identity], registered: bool):
        self.identities = identities
        self.registered = registered or bool(identities)

    def subject(self, path: str, headers: Any, query: dict[str, str]) -> str:
        """The identity a token is issued to; PermissionError(why) when none may have one."""
        if not self.registered:
            return ANONYMOUS
        if path.rstrip("/") != APP_SERVICE_ROUTE:
            raise PermissionError("the IMDS route carries no secret, so it issues no token when "
                                  "serve runs with --client or --managed-identity (sign in as an "
                                  "application at the Entra ID token endpoint instead)")
        if not self.identities:
            raise PermissionError("no managed identity is registered (serve runs with --client "
                                  "and no --managed-identity ID:SECRET)")
        wanted = query.get("client_id") or query.get("clientid")
        identity = self.identities.get(wanted) if wanted else next(iter(self.identities.values()))
        if identity is None:
            raise PermissionError(f"managed identity {wanted!r} is not registered")
        sent = headers.get(SECRET_HEADER) or ""
        if not hmac.compare_digest(sent.encode(), identity.secret.encode()):
            raise PermissionError(f"{SECRET_HEADER} is missing or not the secret of managed "
                                  f"identity {identity.client_id!r} (App Service's IDENTITY_HEADER)")
        return identity.client_id


def answer(handler: Any) -> None:
    """Answer a token request on either route (the handler's `respond`)."""
    resource = handler.query.get("resource", STORAGE)
    services = getattr(handler.server, "services", None)
    if services is None:  # an endpoint without services: an unsigned token, for tests
        token, expires = unsigned_token(resource)
    else:
        try:
            subject = services.identity_gate.subject(handler.raw_path, handler.headers,
                                                     handler.query)
        except PermissionError as exc:
            handler.error_code, handler.error_message = "unauthorized_client", str(exc)
            body = {"error": "unauthorized_client", "error_description": str(exc)}
            handler.respond(401, {"Content-Type": "application/json"}, json.dumps(body).encode())
            return
        token, expires = services.managed_identity_token(resource, subject)
    doc = {"access_token": token, "expires_on": str(expires), "resource": resource,
           "token_type": "Bearer"}
    if handler.raw_path.startswith("/metadata/"):
        doc.update({"expires_in": "3600", "ext_expires_in": "3600",
                    "not_before": str(expires - 3600)})
    handler.respond(200, {"Content-Type": "application/json"}, json.dumps(doc).encode())


def unsigned_token(resource: str) -> tuple[str, int]:
    """An unsigned JWT-shaped bearer token in the storage audience, and its expiry (for an
    endpoint without services; `serve` itself signs its tokens: services.py)."""
    expires = int(time.time()) + 3600

    def part(doc: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    claims = {"aud": resource or STORAGE, "iss": "mirrorspec-serve", "exp": expires,
              "oid": str(uuid.uuid4())}
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.", expires
