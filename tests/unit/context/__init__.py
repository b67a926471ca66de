"""Unit tests of mirrorspec/context/, the layer under the CLI and the API."""
