"""Unit tests of mirrorspec/openmirroring/ and the reference model of the landing-zone semantics."""
