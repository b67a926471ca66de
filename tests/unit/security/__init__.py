"""Unit tests of mirrorspec/security/."""
