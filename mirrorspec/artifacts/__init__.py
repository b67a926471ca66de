"""The files commands leave for people and tools to read, and their readers (pure Python).

- `plan`: `target/plan.json`, the compiled execution plan (`run`'s only input);
- `run_results`: `target/run_results.json`, and its mapping of results to Fabric states;
- `data_test_results`: `target/test_results.json` (the results of `mirrorspec test`);
- `status`: the Fabric-shaped monitoring JSON beside the mirrored tables;
- `reconciliation`: what `reconcile` and `replay` found, as summary lines and JSON.
"""
