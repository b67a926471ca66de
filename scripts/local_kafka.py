"""A real single-node Kafka broker (KRaft) on 127.0.0.1, for the tests, `make demo-kafka` and
bench/kafka_bench.py.

The broker's jars come from Maven Central's `org.apache.kafka:kafka_2.13` (copied once with
`mvn dependency:copy-dependencies` into ~/.cache/mirrorspec/kafka-broker, offline afterwards).

    python scripts/local_kafka.py fetch          # the jars (what `make test` runs first)
    python scripts/local_kafka.py start DIR      # start a broker keeping its data in DIR;
                                                 # prints bootstrap servers, runs until killed
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

KAFKA_VERSION = "3.9.1"
_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>mirrorspec</groupId><artifactId>kafka-broker</artifactId><version>1</version>
<packaging>pom</packaging><dependencies><dependency><groupId>org.apache.kafka</groupId>
<artifactId>kafka_2.13</artifactId><version>{KAFKA_VERSION}</version></dependency>
</dependencies></project>
"""


def jars_dir() -> Path:
    root = os.environ.get("MIRRORSPEC_KAFKA_BROKER_DIR")
    return Path(root) if root else Path.home() / ".cache" / "mirrorspec" / "kafka-broker"


def fetch_jars() -> Path:
    """The folder of the broker's jars, fetched with Maven the first time."""
    folder = jars_dir()
    jars = folder / "jars"
    if (jars / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file():
        return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit("Maven (mvn) is needed once to fetch the Kafka broker's jars "
                         "(apt-get install maven)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pom.xml").write_text(_POM, encoding="utf-8")
    result = subprocess.run([mvn, "-B", "-q", "dependency:copy-dependencies",
                             f"-DoutputDirectory={jars}", "-DincludeScope=runtime"],
                            cwd=folder, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit("could not fetch the Kafka broker's jars from Maven Central:\n"
                         + (result.stdout + result.stderr)[-2000:])
    return jars


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cluster_id() -> str:
    """A random KRaft cluster id (22 URL-safe base64 characters), never starting with "-": the
    storage tool's argument parser would read such an id as an option (1 start in 64 failed)."""
    while True:
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster.startswith("-"):
            return cluster


class LocalBroker:
    """One KRaft broker+controller process keeping its log in `data_dir`; restartable."""

    def __init__(self, data_dir: str | os.PathLike, port: int | None = None):
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.controller_port = free_port()
        self.process: subprocess.Popen | None = None
        self._formatted = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _properties(self) -> Path:
        path = self.data_dir / "server.properties"
        settings = {
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "log"),
            "num.partitions": "1", "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1", "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()), encoding="utf-8")
        return path

    def _java(self, main: str, *args: str, **kwargs) -> subprocess.Popen:
        jars = fetch_jars()
        command = ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-cp", f"{jars}/*", main, *args]
        return subprocess.Popen(command, stdout=kwargs.get("stdout", subprocess.DEVNULL),
                                stderr=subprocess.STDOUT, cwd=self.data_dir)

    def start(self, timeout: float = 90.0) -> "LocalBroker":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        properties = self._properties()
        if not self._formatted and not (self.data_dir / "log" / "meta.properties").exists():
            fmt = self._java("kafka.tools.StorageTool", "format", "-t", _cluster_id(),
                             "-c", str(properties), stdout=subprocess.PIPE)
            out, _ = fmt.communicate(timeout=120)
            if fmt.returncode != 0:
                raise RuntimeError(f"kafka-storage format failed: {out.decode(errors='replace')}")
        self._formatted = True
        log = open(self.data_dir / "broker.log", "ab")
        self.process = self._java("kafka.Kafka", str(properties), stdout=log)
        log.close()
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        import logging

        from kafka import KafkaAdminClient

        # kafka-python logs every refused connection while the broker starts
        logging.getLogger("kafka").setLevel(logging.CRITICAL)

        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited (see {self.data_dir / 'broker.log'})")
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=3000)
                admin.list_topics()
                admin.close()
                return
            except Exception as exc:  # noqa: BLE001 - not up yet
                last = exc
                time.sleep(0.3)
        raise RuntimeError(f"the Kafka broker did not answer on {self.bootstrap}: {last}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    # --- helpers for producing --------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> None:
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])
        finally:
            admin.close()

    def produce(self, topic: str, messages, partition: int | None = None) -> None:
        """Send (key, value) pairs (str/bytes/None) and wait until all are acknowledged."""
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5)
        try:
            for key, value in messages:
                producer.send(topic, key=_bytes(key), value=_bytes(value), partition=partition)
            producer.flush()
        finally:
            producer.close()

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Move a partition's log start offset, as retention would."""
        from kafka import KafkaAdminClient
        from kafka.structs import TopicPartition

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.delete_records({TopicPartition(topic, partition): before_offset})
        finally:
            admin.close()


def _bytes(value):
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def main(argv: list[str]) -> int:
    if argv[:1] == ["fetch"]:
        print(fetch_jars())
        return 0
    if argv[:1] == ["start"] and len(argv) == 2:
        broker = LocalBroker(argv[1]).start()
        print(broker.bootstrap, flush=True)
        try:
            while broker.process and broker.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        finally:
            broker.stop()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
