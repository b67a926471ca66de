"""Microsoft Entra ID, locally: the OpenID configuration, the JWKS, the v2.0 token endpoint
(client credentials with a secret or a certificate-signed client assertion; refresh tokens)
and the instance discovery MSAL asks for, so azure-identity credentials pointed at
`AZURE_AUTHORITY_HOST=<serve url>` get tokens `serve` signs (docs/onelake.md "Entra ID").

Clients: `--client ID:SECRET` or `--client ID:@CERT.pem` registers one; with none registered
any client id and secret is accepted, and a client assertion's signature is checked only when
it carries its certificate (`x5c`).
"""

from __future__ import annotations

import base64
import hmac
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from mirrorspec.serve.tokens import TokenAuthority, TokenRefused

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
REFRESH_AUDIENCE = "urn:mirrorspec-serve:refresh-token"
REFRESH_LIFETIME = 24 * 3600
MAX_FORM = 64 << 10


@dataclass(frozen=True)
class Reply:
    """A JSON answer (no body when `body` is None)."""

    status: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Client:
    """A registered application: a secret, or a certificate (its public key and thumbprints)."""

    client_id: str
    secret: str | None = None
    certificate: x509.Certificate | None = None


class ClientError(ValueError):
    """A `--client` value that is not ID:SECRET or ID:@CERT.pem."""


def parse_clients(values: tuple[str, ...] | list[str]) -> dict[str, Client]:
    """`--client` values → clients by id; a value `ID:@FILE` names a PEM certificate."""
    clients: dict[str, Client] = {}
    for value in values:
        client_id, sep, secret = value.partition(":")
        if not sep or not client_id.strip() or not secret:
            shown = repr(client_id.strip()) if sep else "value"  # never the secret part
            raise ClientError(f"--client {shown}: give ID:SECRET or ID:@CERT.pem")
        client_id = client_id.strip()
        if secret.startswith("@"):
            path = Path(secret[1:])
            try:
                cert = x509.load_pem_x509_certificate(path.read_bytes())
            except (OSError, ValueError) as exc:
                raise ClientError(f"--client {client_id}: can't read the PEM certificate {path}: "
                                  f"{exc}") from None
            clients[client_id] = Client(client_id, certificate=cert)
        else:
            clients[client_id] = Client(client_id, secret=secret)
    return clients


def _now_text() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def oauth_error(status: int, error: str, code: int, description: str) -> Reply:
    """An OAuth 2.0 error in Entra's shape (`AADSTSnnnn: …`, `error_codes`)."""
    trace = str(uuid.uuid4())
    return Reply(status, {"error": error, "error_description": f"AADSTS{code}: {description} "
                          f"Trace ID: {trace} Timestamp: {_now_text()}",
                          "error_codes": [code], "timestamp": _now_text(), "trace_id": trace,
                          "correlation_id": str(uuid.uuid4())})


def _thumbprint_bytes(value: str) -> bytes:
    """An `x5t`/`x5t#S256` header value (base64url by the spec; MSAL pads it) as bytes."""
    text = value.replace("+", "-").replace("/", "_").rstrip("=")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return b""


class Entra:
    """The Entra endpoints of one `serve` process."""

    def __init__(self, authority: TokenAuthority, clients: dict[str, Client] | None = None):
        self.authority = authority
        self.clients = clients or {}

    # --- routing --------------------------------------------------------------------------
    @staticmethod
    def owns(segments: list[str]) -> bool:
        """True when the path is one of the Entra endpoints (checked before storage paths)."""
        tail = [s.lower() for s in segments[1:]]
        return (tail in (["v2.0", ".well-known", "openid-configuration"],
                         ["oauth2", "v2.0", "token"], ["discovery", "v2.0", "keys"])
                or [s.lower() for s in segments] == ["common", "discovery", "instance"])

    def answer(self, method: str, segments: list[str], query: dict[str, str], form: bytes,
               base_url: str) -> Reply:
        tenant, tail = segments[0], [s.lower() for s in segments[1:]]
        if [s.lower() for s in segments] == ["common", "discovery", "instance"]:
            return self.instance_discovery(query, base_url)
        if tail == ["v2.0", ".well-known", "openid-configuration"]:
            return Reply(200, self.openid_configuration(tenant, base_url))
        if tail == ["discovery", "v2.0", "keys"]:
            return Reply(200, self.authority.jwks())
        if method != "POST":
            return oauth_error(405, "invalid_request", 900561,
                               "The endpoint only accepts POST requests.")
        return self.token(tenant, form, base_url)

    # --- discovery ------------------------------------------------------------------------
    def openid_configuration(self, tenant: str, base_url: str) -> dict[str, Any]:
        root = f"{base_url}/{tenant}"
        return {
            "issuer": f"{root}/v2.0",
            "authorization_endpoint": f"{root}/oauth2/v2.0/authorize",
            "token_endpoint": f"{root}/oauth2/v2.0/token",
            "device_authorization_endpoint": f"{root}/oauth2/v2.0/devicecode",
            "jwks_uri": f"{root}/discovery/v2.0/keys",
            "response_types_supported": ["code", "id_token", "code id_token", "token id_token"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt",
                                                      "client_secret_basic"],
            "grant_types_supported": ["client_credentials", "refresh_token"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "tenant_region_scope": None,
            "cloud_instance_name": urlsplit(base_url).netloc,
        }

    def instance_discovery(self, query: dict[str, str], base_url: str) -> Reply:
        endpoint = query.get("authorization_endpoint", "")
        here = urlsplit(base_url).netloc.lower()
        parts = urlsplit(endpoint)
        segments = [s for s in parts.path.split("/") if s]
        # MSAL names the authority's host without its port
        if (parts.hostname or "") != urlsplit(base_url).hostname or not segments:
            return oauth_error(400, "invalid_instance", 50049, "Unknown or invalid instance.")
        tenant = segments[0]
        return Reply(200, {
            "tenant_discovery_endpoint":
                f"{base_url}/{tenant}/v2.0/.well-known/openid-configuration",
            "api-version": "1.1",
            "metadata": [{"preferred_network": here, "preferred_cache": here, "aliases": [here]}]})

    # --- tokens ---------------------------------------------------------------------------
    def token(self, tenant: str, form_bytes: bytes, base_url: str) -> Reply:
        try:
            form = dict(parse_qsl(form_bytes.decode("utf-8"), keep_blank_values=True,
                                  strict_parsing=False))
        except UnicodeDecodeError:
            return oauth_error(400, "invalid_request", 900144, "The request body is not "
                               "application/x-www-form-urlencoded UTF-8.")
        grant = form.get("grant_type", "")
        if not grant:
            return oauth_error(400, "invalid_request", 900144, "The request body must contain "
                               "the following parameter: 'grant_type'.")
        if grant not in ("client_credentials", "refresh_token"):
            return oauth_error(400, "unsupported_grant_type", 70003, f"The app requested an "
                               f"unsupported grant type '{grant}'.")
        client_id = form.get("client_id", "")
        if not client_id:
            return oauth_error(400, "invalid_request", 900144, "The request body must contain "
                               "the following parameter: 'client_id'.")
        token_endpoint = f"{base_url}/{tenant}/oauth2/v2.0/token"
        refused = self._authenticate(client_id, form, token_endpoint)
        if refused is not None:
            return refused
        issuer = f"{base_url}/{tenant}/v2.0"
        scope = form.get("scope", "")
        if grant == "refresh_token":
            try:
                claims = self.authority.verify(form.get("refresh_token", ""), (REFRESH_AUDIENCE,))
            except TokenRefused as exc:
                return oauth_error(400, "invalid_grant", 9002313, "Invalid request. The refresh "
                                   f"token is not valid: {exc.reason}")
            if claims.get("appid") != client_id:
                return oauth_error(400, "invalid_grant", 70000, "Provided grant is invalid: the "
                                   "refresh token was issued to another client.")
            scope = scope or str(claims.get("scp") or "")
        resources = [s for s in scope.split() if s not in ("openid", "profile", "offline_access")]
        if len(resources) != 1 or not resources[0].endswith("/.default"):
            return oauth_error(400, "invalid_scope", 1002012, f"The provided value for scope "
                               f"'{scope}' is not valid. Client credential flows must have a "
                               "scope value with /.default suffixed to the resource identifier.")
        issued = self.authority.issue(resources[0], issuer, client_id, tenant)
        body: dict[str, Any] = {"token_type": "Bearer", "expires_in": issued.expires_on - int(
            time.time()), "ext_expires_in": issued.expires_on - int(time.time()),
            "access_token": issued.token, "scope": resources[0]}
        if "offline_access" in scope.split() or grant == "refresh_token":
            refresh = self.authority.issue(REFRESH_AUDIENCE, issuer, client_id, tenant,
                                           lifetime=REFRESH_LIFETIME, extra={"scp": scope})
            body["refresh_token"] = refresh.token
        return Reply(200, body, (("Cache-Control", "no-store"), ("Pragma", "no-cache")))

    def _authenticate(self, client_id: str, form: dict[str, str],
                      token_endpoint: str) -> Reply | None:
        """None when the client proved who it is; Entra's refusal otherwise."""
        client = self.clients.get(client_id)
        if self.clients and client is None:
            return oauth_error(401, "unauthorized_client", 700016, f"Application with "
                               f"identifier '{client_id}' was not found in the directory.")
        secret, assertion = form.get("client_secret"), form.get("client_assertion")
        if assertion is not None:
            if form.get("client_assertion_type") != ASSERTION_TYPE:
                return oauth_error(400, "invalid_request", 900144, "client_assertion_type must "
                                   f"be '{ASSERTION_TYPE}'.")
            return self._check_assertion(client_id, client, assertion, token_endpoint)
        if secret is None:
            return oauth_error(401, "invalid_client", 7000218, "The request body must contain "
                               "the following parameter: 'client_assertion' or "
                               "'client_secret'.")
        if client is not None and (client.secret is None or not hmac.compare_digest(
                client.secret.encode(), secret.encode())):
            return oauth_error(401, "invalid_client", 7000215, "Invalid client secret provided. "
                               f"Ensure the secret being sent in the request is the client "
                               f"secret value, not the client secret ID, for a secret added to "
                               f"app '{client_id}'.")
        return None

    def _check_assertion(self, client_id: str, client: Client | None, assertion: str,
                         token_endpoint: str) -> Reply | None:
        try:
            header = jwt.get_unverified_header(assertion)
        except jwt.InvalidTokenError:
            return oauth_error(401, "invalid_client", 50027, "JWT token is invalid or malformed.")
        algorithm = header.get("alg")
        if algorithm not in ("RS256", "PS256"):
            return oauth_error(401, "invalid_client", 5002738, f"The client assertion's "
                               f"algorithm {algorithm!r} is not RS256 or PS256.")
        cert = client.certificate if client is not None else _x5c(header)
        if client is not None and cert is None:
            return oauth_error(401, "invalid_client", 700027, f"Client assertion failed "
                               f"signature validation: no certificate is registered for "
                               f"'{client_id}' (it has a secret).")
        # explicit: PyJWT skips the time checks with the signature's unless told otherwise
        options: dict[str, Any] = {"verify_aud": False, "verify_exp": True, "verify_nbf": True,
                                   "require": ["exp", "iss", "sub"]}
        if cert is None:  # open mode, no x5c: the claims are checked, the signature can't be
            options["verify_signature"] = False
        else:
            thumbprints = {cert.fingerprint(hashes.SHA1()),  # x5t is SHA-1 by spec
                           cert.fingerprint(hashes.SHA256())}
            sent = {str(v) for v in (header.get("x5t"), header.get("x5t#S256")) if v}
            if sent and not {_thumbprint_bytes(v) for v in sent} & thumbprints:
                return oauth_error(401, "invalid_client", 700027, "Client assertion contains an "
                                   "invalid signature: the certificate thumbprint "
                                   f"{sorted(sent)[0]} is not registered for '{client_id}'.")
        try:
            claims = jwt.decode(assertion, cert.public_key() if cert else "",
                                algorithms=["RS256", "PS256"], options=options, leeway=300)
        except jwt.ExpiredSignatureError:
            return oauth_error(401, "invalid_client", 700024, "Client assertion is not within "
                               "its valid time range.")
        except jwt.InvalidSignatureError:
            return oauth_error(401, "invalid_client", 700027, "Client assertion failed "
                               "signature validation.")
        except jwt.InvalidTokenError as exc:
            return oauth_error(401, "invalid_client", 50027, f"JWT token is invalid or "
                               f"malformed: {exc}.")
        if claims.get("iss") != client_id or claims.get("sub") != client_id:
            return oauth_error(401, "invalid_client", 700023, "The client assertion's iss and "
                               f"sub claims must both be the client id '{client_id}'.")
        audiences = claims.get("aud")
        audiences = audiences if isinstance(audiences, list) else [audiences]
        issuer_root = token_endpoint.rsplit("/oauth2/", 1)[0]
        accepted = {token_endpoint.lower(), f"{issuer_root}/v2.0".lower()}
        if not any(isinstance(a, str) and a.rstrip("/").lower() in accepted for a in audiences):
            return oauth_error(401, "invalid_client", 700021, f"The client assertion's audience "
                               f"{audiences!r} is not the token endpoint {token_endpoint}.")
        return None


def _x5c(header: dict[str, Any]) -> x509.Certificate | None:
    chain = header.get("x5c")
    if not isinstance(chain, list) or not chain or not isinstance(chain[0], str):
        return None
    try:
        return x509.load_der_x509_certificate(base64.b64decode(chain[0]))
    except ValueError:
        return None
