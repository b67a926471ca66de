"""Click commands, one module per area; each exports COMMANDS (registered in mirrorspec.cli).

The top of the house: only `cli` imports these modules, they never import each other (`params`
is shared), and they are the only modules that import `mirrorspec.spark` (lazily).

- `params`: the options commands share, each defined once with its env-var fallback, and the
  console.
- `project`: `init`, `validate`, `compile`, `ls` and `clean` (no JVM).
- `diff`: `diff`, what a change to the project does to the mirrored tables.
- `lint`: `lint`, a landing zone checked against the open-mirroring contract (no JVM).
- `run`: `run`, `publish`, `build` and `retry`, the compiled plan executed on Spark.
- `mirror`: `mirror`, a landing zone applied to Delta tables, once or watching.
- `inspect`: `status`, `show`, `history`, `changes` and `export`.
- `datatest`: `test`, the data tests declared in the YAML.
- `maintain`: `maintain`, deletion vectors purged, OPTIMIZE and VACUUM.
- `reconcile`: `reconcile`, a mirrored table against a trusted snapshot of its source.
- `replay`: `replay`, a mirrored table against its own history of landing files.
- `docs`: `docs generate|serve`, the static site of the mirrored tables.
- `debug`: `debug`, what this installation and project need, one line each.
- `serve`: `serve`, the local OneLake landing-zone endpoint and Fabric API (no JVM).
- `spark`: `spark start|status|stop`, the warm local Spark Connect server.
"""
