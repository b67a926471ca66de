#!/usr/bin/env bash
# The reconcile JDBC test needs Debian's PostgreSQL server (initdb/pg_ctl; the test starts a
# private cluster on a free port) and the PostgreSQL JDBC driver in mirrorspec's jar cache.
# Install what is missing when we can (root + apt-get); exit 1 when the server isn't available,
# so `make test` can skip that test (and CI fails instead).
set -u
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$REPO/.venv/bin/python" -m mirrorspec.spark.platform.jars postgres >/dev/null || exit 1
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's postgresql for the reconcile JDBC test..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null 2>&1
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && exit 0
fi
echo "PostgreSQL is not installed: the reconcile JDBC test will be skipped (apt-get install postgresql)" >&2
exit 1
