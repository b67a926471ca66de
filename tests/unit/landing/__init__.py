"""Unit tests of mirrorspec/landing/: layout, lint, processed files."""
