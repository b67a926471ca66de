"""Entra ID on `mirrorspec serve` (docs/onelake.md "Entra ID, locally"): the real azure-identity
credentials (ClientSecretCredential, CertificateCredential, EnvironmentCredential) take tokens
from serve's token endpoint with `AZURE_AUTHORITY_HOST=<serve url>`, and the real
azure-storage-file-datalake client writes with them under `--require-auth`; forged, expired and
wrong-audience tokens get the service's 401.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode, urlsplit

import pytest

from tests.support.no_jvm import skip_unless
from tests.support.onelake_server import OneLakeServe

try:
    import jwt
    import msal
    from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
    from azure.identity import CertificateCredential, ClientSecretCredential, EnvironmentCredential
    from azure.storage.filedatalake import DataLakeServiceClient
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID
    HAVE_SDK = True
except ImportError:  # the onelake-test extra is not installed
    HAVE_SDK = False

TENANT = "11111111-2222-3333-4444-555555555555"
SECRET_APP, SECRET = "app-secret", "s3cr3t-value"
CERT_APP = "app-cert"
LZ = "db1.MountedRelationalDatabase/Files/LandingZone"
STORAGE = "https://storage.azure.com/.default"


def make_cert(folder):
    """A self-signed certificate and its key in one PEM (as CertificateCredential reads it)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mirrorspec-test-app")])
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    (folder / "app-cert.pem").write_bytes(cert_pem)
    (folder / "app.pem").write_bytes(key_pem + cert_pem)
    return folder / "app-cert.pem", folder / "app.pem"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    skip_unless(HAVE_SDK, "the Azure SDK (pip install 'mirrorspec[onelake-test]') is not installed")
    tmp = tmp_path_factory.mktemp("entra")
    public, combined = make_cert(tmp)
    server = OneLakeServe(tmp, "--self-signed", "--require-auth", "--workspace", "ws1", "--item",
                          "db1", "--client", f"{SECRET_APP}:{SECRET}",
                          "--client", f"{CERT_APP}:@{public}")
    server.cert_path = combined
    mp = pytest.MonkeyPatch()
    mp.setenv("REQUESTS_CA_BUNDLE", server.ready["ca_file"])
    mp.setenv("SSL_CERT_FILE", server.ready["ca_file"])
    mp.setenv("AZURE_AUTHORITY_HOST", server.ready["authority_host"])
    for name in ("AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID",
                 "AZURE_CLIENT_CERTIFICATE_PATH", "IDENTITY_ENDPOINT", "MSI_ENDPOINT"):
        mp.delenv(name, raising=False)
    yield server
    mp.undo()
    assert server.stop() == 0
    assert SECRET not in server.log()  # secrets never reach the log


def write_with(endpoint, credential, name: str) -> bytes:
    service = DataLakeServiceClient(endpoint.ready["account_url"], credential=credential)
    file = service.get_file_system_client("ws1").get_file_client(f"{LZ}/t.schema/{name}")
    file.upload_data(b"id\n1\n", overwrite=True)
    return file.download_file().readall()


def test_client_secret_credential_writes(endpoint):
    credential = ClientSecretCredential(TENANT, SECRET_APP, SECRET, disable_instance_discovery=True)
    token = credential.get_token(STORAGE)
    claims = jwt.decode(token.token, options={"verify_signature": False})
    assert claims["aud"] == "https://storage.azure.com" and claims["appid"] == SECRET_APP
    assert claims["iss"] == f"{endpoint.ready['authority_host']}/{TENANT}/v2.0"
    assert write_with(endpoint, credential, "secret.csv") == b"id\n1\n"


def test_certificate_credential_writes(endpoint):
    credential = CertificateCredential(TENANT, CERT_APP, certificate_path=str(endpoint.cert_path),
                                       disable_instance_discovery=True)
    assert write_with(endpoint, credential, "cert.csv") == b"id\n1\n"


def test_environment_credential_writes(endpoint, monkeypatch):
    monkeypatch.setenv("AZURE_TENANT_ID", TENANT)
    monkeypatch.setenv("AZURE_CLIENT_ID", SECRET_APP)
    monkeypatch.setenv("AZURE_CLIENT_SECRET", SECRET)
    # MSAL validates an unknown authority at login.microsoftonline.com unless told not to
    credential = EnvironmentCredential(disable_instance_discovery=True)
    assert write_with(endpoint, credential, "env.csv") == b"id\n1\n"


def test_msal_instance_discovery_at_serve(endpoint):
    """MSAL's own authority validation, pointed at serve's instance-discovery endpoint."""
    url = endpoint.ready["authority_host"]
    app = msal.ConfidentialClientApplication(
        SECRET_APP, client_credential=SECRET, authority=f"{url}/{TENANT}",
        instance_discovery=f"{url}/common/discovery/instance")
    result = app.acquire_token_for_client([STORAGE])
    assert result.get("token_type") == "Bearer", result


def test_wrong_secret_and_unknown_client_are_refused(endpoint):
    with pytest.raises(ClientAuthenticationError, match="AADSTS7000215"):
        ClientSecretCredential(TENANT, SECRET_APP, "wrong", disable_instance_discovery=True
                               ).get_token(STORAGE)
    with pytest.raises(ClientAuthenticationError, match="AADSTS700016"):
        ClientSecretCredential(TENANT, "nobody", SECRET, disable_instance_discovery=True
                               ).get_token(STORAGE)


def test_an_assertion_signed_by_another_key_is_refused(endpoint, tmp_path):
    """The certificate client, but a key that is not the registered certificate's."""
    _public, other = make_cert(tmp_path)
    with pytest.raises(ClientAuthenticationError, match="AADSTS700027"):
        CertificateCredential(TENANT, CERT_APP, certificate_path=str(other),
                              disable_instance_discovery=True).get_token(STORAGE)


def _post_token(endpoint, form: dict) -> tuple[int, dict]:
    url = urlsplit(endpoint.ready["authority_host"])
    context = ssl.create_default_context(cafile=endpoint.ready["ca_file"])
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=30)
    conn.request("POST", f"/{TENANT}/oauth2/v2.0/token", urlencode(form),
                 {"Content-Type": "application/x-www-form-urlencoded"})
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    return response.status, body


def test_refresh_token_grant(endpoint):
    status, first = _post_token(endpoint, {
        "grant_type": "client_credentials", "client_id": SECRET_APP, "client_secret": SECRET,
        "scope": f"{STORAGE} offline_access"})
    assert status == 200 and first["refresh_token"]
    status, second = _post_token(endpoint, {
        "grant_type": "refresh_token", "client_id": SECRET_APP, "client_secret": SECRET,
        "refresh_token": first["refresh_token"]})
    assert status == 200, second
    assert jwt.decode(second["access_token"], options={"verify_signature": False})["aud"] == \
        "https://storage.azure.com"
    status, refused = _post_token(endpoint, {
        "grant_type": "refresh_token", "client_id": SECRET_APP, "client_secret": SECRET,
        "refresh_token": first["access_token"]})  # an access token is no refresh token
    assert (status, refused["error"]) == (400, "invalid_grant")


class Token:
    """A fixed bearer token as an azure-core credential."""

    def __init__(self, token: str):
        self.token = token

    def get_token(self, *scopes, **kwargs):
        from azure.core.credentials import AccessToken

        return AccessToken(self.token, int(time.time()) + 3600)


def _refused(endpoint, token: str) -> HttpResponseError:
    with pytest.raises(HttpResponseError) as info:
        write_with(endpoint, Token(token), "refused.csv")
    return info.value


def _client_token(endpoint, scope: str = STORAGE) -> str:
    status, body = _post_token(endpoint, {
        "grant_type": "client_credentials", "client_id": SECRET_APP, "client_secret": SECRET,
        "scope": scope})
    assert status == 200, body
    return body["access_token"]


def _resign(token: str, **claims) -> str:
    head, payload, signature = token.split(".")
    doc = json.loads(base64.urlsafe_b64decode(payload + "=="))
    doc.update(claims)
    forged = base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")
    return f"{head}.{forged}.{signature}"


def test_forged_expired_and_wrong_audience_tokens_get_401(endpoint):
    good = _client_token(endpoint)
    forged = _refused(endpoint, _resign(good, appid="someone-else"))
    assert forged.status_code == 401 and forged.error_code == "InvalidAuthenticationInfo"
    assert "Signature validation failed" in str(forged)
    assert forged.response.headers["WWW-Authenticate"].startswith("Bearer authorization_uri=")

    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    header = jwt.get_unverified_header(good)
    expired_claims = jwt.decode(good, options={"verify_signature": False})
    expired_claims["exp"] = int(time.time()) - 60
    self_signed = jwt.encode(expired_claims, other_key, algorithm="RS256",
                             headers={"kid": header["kid"]})
    assert _refused(endpoint, self_signed).status_code == 401  # right kid, another key

    refused = _refused(endpoint, _client_token(endpoint, "https://management.azure.com/.default"))
    assert refused.status_code == 401 and "Audience validation failed" in str(refused)
    assert _refused(endpoint, "not-a-jwt").status_code == 401
