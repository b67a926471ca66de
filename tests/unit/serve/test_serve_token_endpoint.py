"""Entra ID's token endpoint on `serve` (mirrorspec/serve/entra.py): what a client assertion must
hold, which clients sign in, and the refusals in Entra's shape (AADSTS codes)."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

import pytest

jwt = pytest.importorskip("jwt")

from cryptography import x509  # noqa: E402 - after the skip
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

from mirrorspec.serve.entra import (ASSERTION_TYPE, ClientError, Entra,  # noqa: E402
                                    parse_clients)
from mirrorspec.serve.tokens import TokenAuthority  # noqa: E402

BASE, TENANT = "https://127.0.0.1:4443", "t1"
ENDPOINT = f"{BASE}/{TENANT}/oauth2/v2.0/token"


def make_cert():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "app")])
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
            .sign(key, hashes.SHA256()))
    return key, cert


@pytest.fixture(scope="module")
def keys():
    return make_cert(), make_cert()


def assertion(key, client="app", aud=ENDPOINT, exp_in=600, alg="RS256", **headers) -> str:
    now = int(time.time())
    claims = {"aud": aud, "iss": client, "sub": client, "jti": str(uuid.uuid4()),
              "nbf": now, "exp": now + exp_in}
    return jwt.encode(claims, key, algorithm=alg, headers=headers)


def token(entra: Entra, **form) -> tuple[int, dict]:
    form.setdefault("grant_type", "client_credentials")
    form.setdefault("client_id", "app")
    form.setdefault("scope", "https://storage.azure.com/.default")
    reply = entra.answer("POST", [TENANT, "oauth2", "v2.0", "token"], {},
                         urlencode(form).encode(), BASE)
    return reply.status, reply.body


def with_assertion(entra, signed, **form):
    return token(entra, client_assertion_type=ASSERTION_TYPE, client_assertion=signed, **form)


def test_open_mode_checks_the_assertion_claims(keys):
    (key, _cert), _other = keys
    entra = Entra(TokenAuthority())
    assert token(entra, client_secret="anything")[0] == 200
    assert with_assertion(entra, assertion(key))[0] == 200
    cases = [(assertion(key, aud="https://elsewhere/token"), "AADSTS700021"),
             (assertion(key, exp_in=-900), "AADSTS700024"),
             (assertion(key, client="someone-else"), "AADSTS700023"),
             ("not.a.jwt", "AADSTS50027")]
    for signed, code in cases:
        status, body = with_assertion(entra, signed)
        assert (status, body["error"]) == (401, "invalid_client") and code in \
            body["error_description"], body


def test_a_registered_certificate_must_sign_the_assertion(keys, tmp_path):
    (key, cert), (other_key, _other) = keys
    pem = tmp_path / "app.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    entra = Entra(TokenAuthority(), parse_clients([f"app:@{pem}", "svc:s3cret"]))
    assert with_assertion(entra, assertion(key, alg="PS256"))[0] == 200
    status, body = with_assertion(entra, assertion(other_key))
    assert status == 401 and "AADSTS700027" in body["error_description"]
    status, body = token(entra, client_id="svc", client_secret="wrong")
    assert status == 401 and body["error_codes"] == [7000215]
    status, body = token(entra, client_id="nobody", client_secret="s3cret")
    assert status == 401 and body["error_codes"] == [700016]
    status, body = token(entra, client_secret="s3cret")  # a certificate app with a secret
    assert status == 401 and body["error_codes"] == [7000215]


def test_bad_requests_get_entras_errors():
    entra = Entra(TokenAuthority())
    assert token(entra, grant_type="password")[1]["error"] == "unsupported_grant_type"
    status, body = token(entra, client_secret="x", scope="https://storage.azure.com/user_impersonation")
    assert (status, body["error"]) == (400, "invalid_scope")
    assert token(entra, client_secret="x", grant_type="refresh_token",
                 refresh_token="forged")[1]["error"] == "invalid_grant"
    reply = entra.answer("GET", ["common", "discovery", "instance"],
                         {"authorization_endpoint": "https://evil.example/t/oauth2/v2.0/authorize"},
                         b"", BASE)
    assert (reply.status, reply.body["error"]) == (400, "invalid_instance")


@pytest.mark.parametrize("value", ["nocolon", ":secret", "app:", "app:@/no/such.pem"])
def test_client_options_are_checked(value):
    with pytest.raises(ClientError, match="--client") as info:
        parse_clients([value])
    assert "secret" not in str(info.value)  # the secret part is never echoed
