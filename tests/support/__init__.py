"""Helpers shared by the tests (imported as `from tests.support.<module> import …`): project
and landing-zone writers, the reference model of the mirroring semantics, the delivery harness
and its reader adapters, fake services (S3, OneLake `serve`, metrics/lineage collectors, the warm
server's spark-submit) and the CLI run without a JVM."""
