"""Debezium's "unchanged, not sent" placeholder in every form a connector sends it.

A column a connector could not read — a Postgres TOAST-ed value an update did not change
(REPLICA IDENTITY other than FULL), an Oracle LOB, a MySQL column left out by
`binlog_row_image` — carries the connector's `unavailable.value.placeholder` (default
`__debezium_unavailable_value`; `hex:<octets>` configures bytes) converted to the column's type.
The forms follow Debezium's `UnchangedToastedPlaceholder` and `PostgresValueConverter`
(https://github.com/debezium/debezium at aad5519902, debezium-connector-postgres; tests
`RecordsStreamProducerIT` DBZ-5936 and DBZ-6122):

- text, json, xml, … columns, and bytea with `binary.handling.mode` hex: the placeholder text;
- bytea (`bytes`): the placeholder's bytes (base64 in JSON, raw bytes from Avro);
- text[], varchar[], bpchar[], json[], jsonb[]: `[text]`; bytea[]: `[bytes]`;
- integer[], date[] and bigint[]: the placeholder's bytes as numbers, one per byte
  (`[95, 95, 100, 101, 98, …]`; Java's signed bytes, so octets above 127 are negative);
- uuid[]: `[the name-based (version 3) UUID of the placeholder's bytes]`;
- hstore: `{text: text}`, or that map as JSON text (`hstore.handling.mode` json);
- a VariableScaleDecimal whose `value` is the placeholder's bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from typing import Any

DEFAULT = "__debezium_unavailable_value"


class Placeholder:
    """One configured placeholder and every form of it (see the module docstring)."""

    def __init__(self, configured: str = DEFAULT):
        if configured.startswith("hex:"):
            try:
                raw = binascii.unhexlify(configured[4:])
            except (binascii.Error, ValueError):
                raise ValueError(f"unavailable_value_placeholder {configured!r}: the octets "
                                 "after 'hex:' are not hexadecimal") from None
        else:
            raw = configured.encode("utf-8")
        self.configured = configured
        self.raw = raw
        self.text = raw.decode("utf-8", "replace")  # Java's new String(bytes)
        self.base64 = base64.b64encode(raw).decode("ascii")
        self.numbers = [b - 256 if b > 127 else b for b in raw]
        # Java's UUID.nameUUIDFromBytes: MD5, version 3 (a name, not a password)
        digest = hashlib.md5(raw, usedforsecurity=False).digest()
        self.uuid = str(uuid.UUID(bytes=digest, version=3))
        self.hstore = {self.text: self.text}
        self._texts = {self.text, self.base64}
        self._arrays = ([self.text], [self.base64], [self.uuid], self.numbers)

    def matches(self, value: Any) -> bool:
        """True when `value` is the placeholder in one of its forms."""
        kind = type(value)
        if kind is str:
            if value in self._texts:
                return True
            return value[:1] == "{" and value.endswith("}") and self._hstore_text(value)
        if kind is bytes or kind is bytearray:
            return bytes(value) == self.raw
        if kind is list:
            if not value:
                return False
            if value in self._arrays or value == [self.raw]:
                return True
            return all(type(v) is str and v in self._texts for v in value)
        if kind is dict:
            if value == self.hstore:
                return True
            if "value" in value and set(value) <= {"scale", "value"}:
                return self.matches(value["value"])  # a VariableScaleDecimal
        return False

    def _hstore_text(self, value: str) -> bool:
        try:
            return json.loads(value) == self.hstore
        except ValueError:
            return False


_CACHE: dict[str, Placeholder] = {}


def placeholder(configured: str = DEFAULT) -> Placeholder:
    """The (cached) Placeholder of a configured `unavailable.value.placeholder`."""
    found = _CACHE.get(configured)
    if found is None:
        found = _CACHE[configured] = Placeholder(configured)
    return found
