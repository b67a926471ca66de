"""Unit tests of mirrorspec/api.py, the Python front door."""
