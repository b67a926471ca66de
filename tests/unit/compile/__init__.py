"""Unit tests of mirrorspec/compile/: a project into plan.json, with the per-table switches
resolved into the plan."""
