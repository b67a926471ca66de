"""The feed types are listed once: the format registry; everything else follows it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mirrorspec import sources
from mirrorspec.spark.publish import feeds

SCHEMA = Path(sources.__file__).resolve().parents[1] / "schemas" / "tables.schema.json"


def _schema_enum() -> list[str]:
    found: list[list[str]] = []

    def walk(node):
        if isinstance(node, dict):
            if "landing_zone" in node.get("enum", ()):
                found.append(node["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(SCHEMA.read_text()))
    assert len(found) == 1, found
    return found[0]


def test_every_list_of_source_types_follows_the_registry():
    assert sources.FEED_TYPES == tuple(sources.REGISTRY)
    assert sources.SOURCE_TYPES == ("landing_zone",) + sources.FEED_TYPES
    assert list(feeds.READERS) == list(sources.REGISTRY)
    assert _schema_enum() == list(sources.SOURCE_TYPES)


def test_each_format_loads_without_pyspark():
    code = ("import sys\n"
            "from mirrorspec import sources\n"
            "for name in sources.REGISTRY:\n"
            "    assert sources.get_format(name).type_name == name\n"
            "import mirrorspec.spark.publish.feeds\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_each_reader_is_registered_under_its_format_class():
    for name, target in feeds.READERS.items():
        module, cls = target.split(":")
        fmt_module, fmt_cls = sources.REGISTRY[name].split(":")
        assert module == fmt_module.replace("mirrorspec.sources.", "mirrorspec.spark.publish.feeds.")
        assert cls.endswith("Reader") and fmt_cls.endswith("Format")
