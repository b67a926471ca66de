"""`mirrorspec serve`: Fabric's OneLake landing zone on 127.0.0.1 (pure stdlib, no JVM).

An ADLS Gen2 DFS + Blob endpoint, path-style (`/onelake/<workspace>/<item>/...`), over the
project's landing-zone folder (read-write), its warehouse (`Tables/`, read-only) and a rendered
`Files/Monitoring`; Entra ID and Fabric's mirroring REST API locally. See docs/onelake.md.

- `server`: threads, TLS per connection, in-flight requests, clean stop, the ready file;
- `endpoints`: the Host names served and what each routes to (DFS, Blob, Fabric API);
- `framing`: where a request body ends (Content-Length, chunked), read strictly;
- `handler`: one request, DFS or Blob, and the Host check; `listings`: its listing mixin
  (filesystems/containers, paths, blobs);
- `codes`: every refusal (status, x-ms-error-code, guessed or not);
- `names`: URL → (workspace, item, area, path), path safety, display names;
- `store`: the folders behind it (part files, staging, atomic flush, ETags, locks);
- `uploads`: one file's uncommitted bytes and byte copies; `blocks`: Put Block / Put Block List;
- `properties`: content headers and x-ms-meta-* metadata; `leases`: Lease Blob;
- `persist`: properties, metadata and leases kept across restarts (SQLite);
- `wire`: headers, DFS JSON and Blob XML listings, error bodies;
- `origin`: a web page's request and a non-JSON Fabric API body, refused (CSRF);
- `services`: what serve answers besides storage; `items`: the workspaces and mirrored
  databases one serve hosts, each's engine;
- `fabric_api`: Fabric's mirroring REST API under /v1; `supervise`: the `mirror --watch` child;
- `entra`: Entra ID locally (OpenID configuration, JWKS, tokens); `tokens`: the RS256 tokens
  serve issues and checks; `managed_identity`: the /msi/token and IMDS routes;
- `proxy`: CONNECT to Microsoft's hosts answered by serve itself (HTTPS_PROXY mode);
- `tls`: --cert/--key, --self-signed;
- `monitoring`: Files/Monitoring in Fabric's shape;
- `conformance`: what real Fabric would punish, per request; the --report JSON.
"""
