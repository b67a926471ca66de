"""delta-rs reads `Tables/` through `serve --self-signed` over HTTPS when SSL_CERT_FILE names
serve's CA (docs/onelake.md, "delta-rs / Rust object_store"): object_store trusts the system's
roots and that variable, not REQUESTS_CA_BUNDLE, so without it the TLS handshake fails."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
from deltalake import write_deltalake

from tests.support.onelake_server import OneLakeServe

URI = "abfs://ws@onelake.dfs.fabric.microsoft.com/db.MountedRelationalDatabase/Tables/sales/orders"
READ = """
import os
import sys
from deltalake import DeltaTable
options = {"azure_storage_account_name": "onelake", "azure_storage_token": "any",
           "azure_storage_endpoint": sys.argv[2], "max_retries": "0"}
print(DeltaTable(sys.argv[1], storage_options=options).to_pyarrow_table().num_rows, flush=True)
os._exit(0)  # delta-rs's runtime threads can abort a finishing process (delta-io/delta-rs#2184)
"""


def read_rows(account_url: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """delta-rs in a fresh process (its TLS roots are read when its client is built)."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")}
    return subprocess.run([sys.executable, "-c", READ, URI, account_url],
                          capture_output=True, text=True, env={**clean, **env}, timeout=120)


def test_delta_rs_trusts_serve_s_ca_through_ssl_cert_file(tmp_path):
    write_deltalake(str(tmp_path / "warehouse" / "sales" / "orders"),
                    pa.table({"id": [1, 2, 3]}))
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db", "--self-signed")
    try:
        url, ca_file = server.ready["account_url"], server.ready["ca_file"]
        assert url.startswith("https://")
        trusted = read_rows(url, {"SSL_CERT_FILE": ca_file})
        assert trusted.returncode == 0, trusted.stderr[-2000:]
        assert trusted.stdout.strip() == "3"
        for env in ({}, {"REQUESTS_CA_BUNDLE": ca_file}):  # what Python's clients read
            refused = read_rows(url, env)
            assert refused.returncode != 0 and "UnknownIssuer" in refused.stderr, env
    finally:
        assert server.stop() == 0
