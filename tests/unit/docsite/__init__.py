"""Unit tests of mirrorspec/docsite/."""
