"""Helpers of the observer tests: a tiny OpenLineage HTTP collector on 127.0.0.1 (what Marquez
does with POST /api/v1/lineage), the checks of a received run event against the spec's RunEvent,
and a scrape of a /metrics endpoint parsed with prometheus_client's parser."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SPEC = "https://openlineage.io/spec/"


class Collector:
    """Receives POST /api/v1/lineage bodies, like Marquez would."""

    def __init__(self):
        self.events: list[dict] = []
        self.paths: list[str] = []
        self.headers: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.paths.append(self.path)
                outer.headers.append(dict(self.headers))
                outer.events.append(json.loads(body))
                self.send_response(201)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def check_run_event(event: dict) -> None:
    """The spec's RunEvent (OpenLineage.json#/definitions/RunEvent): required fields, an
    ISO eventTime, a UUID runId, and every facet with _producer and a _schemaURL of the spec."""
    assert event["eventType"] in ("START", "COMPLETE", "FAIL")
    datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00"))
    uuid.UUID(event["run"]["runId"])
    assert event["producer"].startswith("https://")
    assert event["schemaURL"].startswith(SPEC)
    assert event["job"]["namespace"] and event["job"]["name"]
    for dataset in event["inputs"] + event["outputs"]:
        assert dataset["namespace"] and dataset["name"]
    facet_groups = [event["run"].get("facets", {}), event["job"].get("facets", {})]
    for dataset in event["inputs"] + event["outputs"]:
        facet_groups += [dataset.get("facets", {}), dataset.get("outputFacets", {})]
    for facets in facet_groups:
        for name, facet in facets.items():
            assert facet["_producer"], name
            assert facet["_schemaURL"].startswith(SPEC + "facets/"), name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """name + sorted labels → value, from the text a Prometheus server would get."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}
