"""Unit tests of mirrorspec/project/: model, diff, scaffold, selection."""
