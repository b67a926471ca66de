"""Unit tests of mirrorspec/readers/: the JVM-free readers of Delta tables."""
