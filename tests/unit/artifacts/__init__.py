"""Unit tests of mirrorspec/artifacts/: plan.json, run_results.json, test_results.json and
the status JSON."""
