"""Running a mirror unattended (pure Python; the Spark side lives in `mirrorspec.spark`).

- `watch`: what `--watch` does between passes (back-off, once-only reports);
- `heartbeat`: `--watch`'s heartbeat line and file;
- `health`: the verdict of `mirrorspec status` (failed or stale tables);
- `metrics`: the Prometheus `/metrics` endpoint;
- `retry`: what `mirrorspec retry` runs again;
- `retention`: VACUUM retention rules, checked before Spark starts;
- `preflight`: path checks a command makes before it starts Spark.
"""
