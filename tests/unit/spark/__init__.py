"""Unit tests of the JVM-free parts of mirrorspec/spark/ (no SparkSession; the Spark tests
live in tests/spark/)."""
