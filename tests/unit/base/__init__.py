"""Unit tests of mirrorspec/base/: console, errors, files, JSON text, interrupts."""
