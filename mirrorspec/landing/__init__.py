"""The landing zone as folders and files, JVM-free: `layout` (tables, `_metadata.json`, pending
files and their order), `checks` (whether a landing file stops its table: shared by the engine
and `lint`), `processed` (data files and `_ProcessedFiles/`), `deploy` (preparing a folder before
a run). The rules themselves live in `mirrorspec.mirroring`; any module may import this package
except those below it (`progress`, `files`, `mirroring`, …)."""
