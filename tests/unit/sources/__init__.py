"""Unit tests of mirrorspec/sources/: each feed format's reader and its delivery properties."""
