"""`make demo-kafka`: a local Kafka broker, Qlik Replicate's messages on its topics, and
projects/qlik_kafka run against them (twice: the second run picks up only the new messages).

The project is copied into a work folder ($MIRRORSPEC_DEMO_DIR, else a temporary one, removed
unless MIRRORSPEC_DEMO_KEEP=1); the broker keeps its log there and stops at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from local_kafka import LocalBroker  # noqa: E402
from qlik_messages import customer_messages, order_messages, orders_metadata  # noqa: E402

REPO = HERE.parent


def main() -> int:
    mirrorspec = os.environ.get("MIRRORSPEC") or str(REPO / ".venv" / "bin" / "mirrorspec")
    keep = os.environ.get("MIRRORSPEC_DEMO_KEEP") == "1"
    work = Path(os.environ.get("MIRRORSPEC_DEMO_DIR") or tempfile.mkdtemp(prefix="mirrorspec-kafka."))
    if work.exists() and os.environ.get("MIRRORSPEC_DEMO_DIR"):
        shutil.rmtree(work)
    project = work / "qlik_kafka"
    shutil.copytree(REPO / "projects" / "qlik_kafka", project,
                    ignore=shutil.ignore_patterns("target", "landing_zone", "warehouse", ".state"))
    broker = LocalBroker(work / "broker")
    print(f"== starting a Kafka broker (KRaft) in {work / 'broker'}", flush=True)
    broker.start()
    env = dict(os.environ, MIRRORSPEC_KAFKA_SERVERS=broker.bootstrap)

    def mirror(*args: str) -> None:
        print(f"\n$ mirrorspec {' '.join(args)}", flush=True)
        subprocess.run([mirrorspec, *args], cwd=project, env=env, check=True)

    try:
        for topic, partitions in (("replicate.metadata", 1), ("replicate.crm.customers", 1),
                                  ("replicate.crm.orders", 3)):
            broker.create_topic(topic, partitions)
        metadata, data = customer_messages()
        broker.produce("replicate.metadata", [(None, m) for m in metadata])
        broker.produce("replicate.crm.customers", [(None, m) for m in data[:3]])
        broker.produce("replicate.crm.orders", [(None, orders_metadata())], partition=0)
        for partition, message in order_messages(30, refresh=10):
            broker.produce("replicate.crm.orders", [(None, message)], partition=partition)
        print(f"== produced {len(metadata) + 3} customer and 41 order messages", flush=True)
        mirror("run")
        broker.produce("replicate.crm.customers", [(None, m) for m in data[3:]])
        for partition, message in order_messages(12, first_seq=31, first_id=100):
            broker.produce("replicate.crm.orders", [(None, message)], partition=partition)
        print("\n== produced 4 more customer and 12 more order messages", flush=True)
        mirror("run")
        mirror("status")
        mirror("show", "crm.customers")
    finally:
        broker.stop()
        if not keep and not os.environ.get("MIRRORSPEC_DEMO_DIR"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"\n(kept in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
