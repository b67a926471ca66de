"""Spark and Delta access: the session (`session`), the jar sets (`jars`), the driver JVM's
class-data archive (`cds`), Hadoop's FileSystem for URIs (`hadoop_fs`). The lowest wing:
it imports no other wing."""
