"""Tests that need a JVM and the shared SparkSession (all marked `spark` by tests/conftest.py)."""
