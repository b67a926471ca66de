"""Unit tests, one folder per room of mirrorspec/ (docs/architecture.md): no JVM, no CLI
process, no server; a test that drives the CLI or a server lives in tests/functional/."""
