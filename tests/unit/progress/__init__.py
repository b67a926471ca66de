"""Unit tests of mirrorspec/progress/: the records the engine and the publisher keep."""
