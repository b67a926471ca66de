"""`mirrorspec serve`: Fabric's OneLake landing zone on 127.0.0.1 (pure stdlib, no JVM).

An ADLS Gen2 DFS + Blob endpoint, path-style (`/onelake/<workspace>/<item>/...`), over the
project's landing-zone folder (read-write), its warehouse (`Tables/`, read-only) and a rendered
`Files/Monitoring`. Modules: `codes` (every status code, the guessed ones marked), `names`
(URL → place), `store` (files, staging, ETags), `blob`/`dfs` (the two dialects), `monitoring`
(Fabric's JSON shape), `conformance` (what real Fabric would punish), `server` (HTTP, TLS,
tokens, lifecycle). See docs/onelake.md.
"""
