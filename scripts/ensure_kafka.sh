#!/usr/bin/env bash
# The Kafka broker tests start a real KRaft broker from Maven Central's kafka_2.13 jars. Fetch
# them once (mvn dependency:copy-dependencies into ~/.cache/mirrorspec/kafka-broker), installing
# Maven and a JDK when we can (root + apt-get); exit 1 when that isn't possible, so `make test`
# can skip those tests (and CI fails instead).
set -u
PYTHON="${1:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Maven and a JDK for the Kafka broker tests..." >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven default-jdk-headless) >/dev/null 2>&1
  fi
fi
if "$PYTHON" "$HERE/local_kafka.py" fetch >/dev/null; then
  exit 0
fi
echo "the Kafka broker's jars could not be fetched: the kafka tests will be skipped" >&2
exit 1
