"""Avro Debezium feeds for tests: events encoded with fastavro the way Confluent's
KafkaAvroSerializer frames them (magic byte 0, 4-byte big-endian schema id, Avro binary body;
https://github.com/confluentinc/schema-registry, `AbstractKafkaAvroSerializer`), and a minimal
schema registry answering `GET /schemas/ids/{id}` in the Confluent REST shape."""

from __future__ import annotations

import base64
import io
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import fastavro

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "avro"
VALUE_SCHEMA = json.loads((FIXTURES / "customers-value.avsc").read_text())
KEY_SCHEMA = json.loads((FIXTURES / "customers-key.avsc").read_text())
VALUE_ID, KEY_ID = 7, 3


def framed(schema: dict, schema_id: int, datum: dict) -> bytes:
    """A Confluent wire-format message of `datum`."""
    out = io.BytesIO()
    out.write(b"\x00" + struct.pack(">I", schema_id))
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return out.getvalue()


def envelope(op: str, row: dict | None, before: dict | None, lsn: int, commit: int,
             snapshot: str = "false") -> dict:
    """A Postgres envelope datum (values as the AvroConverter writes them)."""
    return {"before": before, "after": row, "op": op, "ts_ms": 1700000000000,
            "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "server1",
                       "ts_ms": 1700000000000, "snapshot": snapshot, "db": "inventory",
                       "sequence": json.dumps([str(commit), str(lsn)]), "schema": "inventory",
                       "table": "customers", "txId": 1, "lsn": lsn}}


def wire_line(datum: dict | None, key: int) -> str:
    """One staged line: base64 key, a tab, base64 value (empty for a tombstone)."""
    k = base64.b64encode(framed(KEY_SCHEMA, KEY_ID, {"id": key})).decode()
    v = "" if datum is None else base64.b64encode(framed(VALUE_SCHEMA, VALUE_ID, datum)).decode()
    return f"{k}\t{v}"


class Registry:
    """A schema registry stub on 127.0.0.1 (ephemeral port) serving the given schemas by id;
    `auth` (user, password) makes it demand Basic credentials."""

    def __init__(self, schemas: dict[int, dict], auth: tuple[str, str] | None = None):
        expected = None if auth is None else "Basic " + base64.b64encode(
            f"{auth[0]}:{auth[1]}".encode()).decode()
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                owner.requests.append(self.path)
                if expected and self.headers.get("Authorization") != expected:
                    return self._send(401, {"error_code": 40101, "message": "Unauthorized"})
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit() \
                        and int(parts[2]) in schemas:
                    return self._send(200, {"schema": json.dumps(schemas[int(parts[2])])})
                return self._send(404, {"error_code": 40403, "message": "Schema not found"})

            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Registry":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
