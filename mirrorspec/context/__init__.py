"""The layer under both front doors: what a command does with a project, for the CLI's
commands (`mirrorspec/commands/`: parse, call, render) and the Python API (`mirrorspec.api`:
the same calls with Python types). Never imports click; crosses the JVM line only lazily,
inside a call.

- `project`: ProjectContext: the plan, compile, run, publish, build, test, retry
- `mirror`: mirror: where, threads, the change data feed switches; one pass or --watch
- `watch`: the one --watch loop (run and mirror), its stop on SIGINT/SIGTERM
- `threads`: how many tables at once: the argument, else the profile's, else the cores
- `sessions`: which Spark session (profile, --master/--conf, the warm server, local)
- `tables`: the mirrored table a command names (plan, warehouse, Delta folder)
- `reading`: a table's rows, change data feed and history (delta-rs, else Spark; which read
  them) and the monitoring JSON: one reading path for show/changes/history/status
- `lineage`: OpenLineage events of run and mirror passes
- `arguments`: argument checks, once for both doors (UsageError naming the argument)
- `inspection`: the tables show/history/changes/export name; export to one file
- `lint`: a landing zone linted (the given folders or the project's) and its verdict
- `diff`: the project's changes against a previous target/ or a git revision; the verdict
- `site`: the docs site generated from a fresh compile, and the folder `docs serve` serves
- `debug`: the checks of `debug` (installation, project, services, Spark) and the verdict
- `warm`: the warm Spark server of a profile output: started, listed, stopped
- `operations`: maintain, reconcile and replay (Spark): checks first, results, verdicts
"""
