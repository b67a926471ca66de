"""How far each pipeline got, JVM-free: `mirror` (the engine's exactly-once record in the Delta
log — txn, userMetadata and state copies — and which landing files each commit applied) and
`publish` (the publisher's state file and Kafka staging folder). Written by `mirrorspec.spark`,
read by lint, status, show/history, data tests, reconcile and replay.

- `mirror`: the engine's record (txn, userMetadata, state copies);
- `publish`: the publisher's state file per table and Kafka staging folder;
- `snapshot`: a Delta table's size, schema and properties from its newest `.crc` (or log).
"""
