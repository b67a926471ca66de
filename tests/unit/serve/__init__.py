"""Unit tests of mirrorspec/serve/, the local OneLake endpoint, in process."""
