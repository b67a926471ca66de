"""TLS for the endpoint: a given certificate and key, or (`--self-signed`) a fresh CA and a
certificate made with `trustme` for the names `serve` answers to (endpoints.certificate_names:
127.0.0.1, localhost, the real OneLake and Fabric API host names, the --allow-host aliases).
The CA file is what clients trust: REQUESTS_CA_BUNDLE, SSL_CERT_FILE, a JVM truststore."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Sequence

from mirrorspec.base.errors import MirrorspecError


def self_signed(folder: Path, names: Sequence[str]) -> tuple[Path, Path, Path]:
    """(certificate chain, key, CA) files for `names`, written to `folder`."""
    try:
        import trustme
    except ImportError:
        raise MirrorspecError("--self-signed needs the trustme package",
                              hint="pip install 'mirrorspec[serve]' (or give --cert and --key)") from None
    ca = trustme.CA(organization_name="mirrorspec serve (local test CA)")
    cert = ca.issue_cert(*names)
    folder.mkdir(parents=True, exist_ok=True)
    chain, key, ca_file = folder / "server.pem", folder / "server.key", folder / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(chain))
    for extra in cert.cert_chain_pems[1:]:
        extra.write_to_path(str(chain), append=True)
    cert.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    key.chmod(0o600)
    return chain, key, ca_file


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A TLS 1.2+ server context; a bad file is a clear error."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as exc:
        raise MirrorspecError(f"can't load the certificate {cert} / key {key}: {exc}",
                              hint="give a PEM certificate (chain) and its PEM private key") from None
    return context
