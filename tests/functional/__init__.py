"""Functional tests: the CLI (CliRunner or a `mirrorspec` process) or a server, end to end."""
