"""Spark and Delta access. The lowest wing: it imports no other wing.

- `session`: build_session, start_session(plan), stop_sessions, Spark Connect;
- `java`: the Java Spark will start, found and version-checked;
- `jars`: the Delta and optional jar sets;
- `cds`: the driver JVM's class-data archive;
- `warm_server`: the warm local Spark Connect server (start, find, stop);
- `hadoop_fs`: Hadoop's FileSystem for URIs (`HadoopFS`, `files_for`);
- `delta`: every Delta statement, table property and commit option; write conflicts;
- `failures`: a storage failure or Spark's own, told apart (`StorageError`);
- `activity`: the tasks of Spark's running stages, for the progress bar;
- `live`: progress you can see for every long command (bar, timed lines, JSON events).
"""
