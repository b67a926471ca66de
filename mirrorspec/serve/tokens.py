"""Bearer tokens `serve` issues and checks: RS256 JWTs signed with an RSA key made at start
(published as JWKS at the OpenID configuration's `jwks_uri`), checked for signature, audience
and expiry by `--require-auth`.

Audiences are the services' own: storage (DFS/Blob) accepts the Azure Storage and OneLake
audiences, the Fabric REST API (`/v1`) the Fabric and Power BI ones (docs/onelake.md).
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

LIFETIME = 3600  # seconds, as Entra's default access-token lifetime (60-90 min)
DEFAULT_TENANT = "00000000-0000-0000-0000-000000000000"
STORAGE_AUDIENCES = ("https://storage.azure.com", "https://onelake.fabric.microsoft.com")
FABRIC_AUDIENCES = ("https://api.fabric.microsoft.com", "https://analysis.windows.net/powerbi/api")
LOCAL_ISSUER = "mirrorspec-serve"  # tokens from /msi/token name no tenant authority


class TokenRefused(Exception):
    """A bearer token the service would refuse; `reason` is Entra's wording of why."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def audience_of(scope_or_resource: str) -> str:
    """`https://storage.azure.com/.default` (a v2 scope) or a v1 resource → the audience."""
    text = scope_or_resource.strip()
    if text.endswith("/.default"):
        text = text[: -len("/.default")]
    return text.rstrip("/")


def _b64url(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass(frozen=True)
class Issued:
    token: str
    expires_on: int


class TokenAuthority:
    """The signing key of one `serve` process; thread-safe (immutable after start)."""

    def __init__(self, lifetime: int = LIFETIME) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = self._key.public_key().public_numbers()
        self.kid = hashlib.sha256(_b64url(numbers.n).encode()).hexdigest()[:32]
        self._jwk = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                     "n": _b64url(numbers.n), "e": _b64url(numbers.e)}
        self.lifetime = lifetime

    def jwks(self) -> dict[str, Any]:
        """The JSON Web Key Set clients verify tokens against."""
        return {"keys": [dict(self._jwk)]}

    def issue(self, audience: str, issuer: str, subject: str, tenant: str = DEFAULT_TENANT,
              lifetime: int | None = None, extra: dict[str, Any] | None = None) -> Issued:
        """A signed access token for `audience`, valid from now for `lifetime` seconds."""
        now = int(time.time())
        expires = now + (self.lifetime if lifetime is None else lifetime)
        claims = {"aud": audience_of(audience), "iss": issuer, "iat": now, "nbf": now,
                  "exp": expires, "sub": subject, "oid": subject, "appid": subject,
                  "azp": subject, "tid": tenant, "idtyp": "app", "uti": uuid.uuid4().hex,
                  **(extra or {})}
        token = jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": self.kid})
        return Issued(token, expires)

    def verify(self, token: str, audiences: tuple[str, ...]) -> dict[str, Any]:
        """The claims of a token this process signed whose audience is one of `audiences`
        and which has not expired; TokenRefused (with Entra's reason) otherwise."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise TokenRefused("IDX14100: JWT is not well formed.") from None
        if header.get("kid") != self.kid or header.get("alg") != "RS256":
            raise TokenRefused("Signature validation failed: the token was not issued by this "
                               "endpoint (unknown key or algorithm).")
        try:
            claims = jwt.decode(token, self._key.public_key(), algorithms=["RS256"],
                                options={"verify_aud": False, "require": ["exp", "aud"]})
        except jwt.ExpiredSignatureError:
            raise TokenRefused("Lifetime validation failed. The token is expired.") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("Lifetime validation failed. The token is not yet valid.") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("Signature validation failed.") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRefused(f"IDX10000: the token is not valid: {exc}.") from None
        audience = claims.get("aud")
        found = audience if isinstance(audience, list) else [audience]
        wanted = {a.lower() for a in audiences}
        if not any(isinstance(a, str) and audience_of(a).lower() in wanted for a in found):
            raise TokenRefused("Audience validation failed. Audience did not match.")
        return claims
