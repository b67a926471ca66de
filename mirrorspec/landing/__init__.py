"""The landing zone as folders and files, JVM-free.

- `layout`: tables, `_metadata.json`, pending files and their order;
- `checks`: whether a landing file stops its table (shared by the engine and `lint`);
- `processed`: data files and `_ProcessedFiles/`;
- `deploy`: preparing a folder before a run;
- `lint/`: `mirrorspec lint`, a landing zone written by any producer checked against
  Microsoft's landing-zone specification
  (a package: findings, zone, table, columns, parquet, delimited, output).

The rules themselves live in `mirrorspec.openmirroring`.
"""
