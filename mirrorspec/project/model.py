"""The project model: frozen dataclasses built from schema-valid documents (`build.py` builds
them, `table_builder.py` builds each table and runs the cross-checks).

Pure Python (stdlib plus `mirrorspec.openmirroring.mirroring`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorspec.base.errors import Location
from mirrorspec.openmirroring import mirroring
from mirrorspec.sources import LANDING_ZONE

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class Column:
    name: str
    type: str | None = None  # the seed's DataType spelling
    nullable: bool | None = None  # None: not said (IsNullable omitted)
    description: str | None = None


@dataclass(frozen=True)
class Delimited:
    """`delimited:`: the FileExtension and the FileFormatTypeProperties the user set."""

    extension: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)  # seed names → values


@dataclass(frozen=True)
class Source:
    type: str = LANDING_ZONE
    path: str | None = None  # as written (resolved by the compiler)
    options: dict[str, Any] = field(default_factory=dict)
    kafka: dict[str, Any] | None = None  # source.kafka, as written (exclusive with path)

    @property
    def is_feed(self) -> bool:
        return self.type != LANDING_ZONE


@dataclass(frozen=True)
class Table:
    name: str
    schema: str | None = None
    description: str | None = None
    key_columns: tuple[str, ...] = ()
    file_detection: str = "sequential"
    upsert_default: bool | None = None
    format: str = "parquet"
    delimited: Delimited | None = None
    columns: tuple[Column, ...] = ()
    source: Source = field(default_factory=Source)
    tags: tuple[str, ...] = ()
    deletion_vectors: bool | None = None  # None: the profile output's switch
    settle_seconds: float | None = None  # None: the profile output's
    change_data_feed: bool | None = None  # None: the project's switch
    recreate: bool = False
    tests: tuple[dict[str, Any], ...] = ()
    yaml_file: str | None = None  # relative to the project dir
    location: Location | None = field(default=None, compare=False)
    key_location: Location | None = field(default=None, compare=False)  # of `key_columns:`
    inferred: tuple[str, ...] = field(default=(), compare=False)  # what came from the feed

    @property
    def warehouse_schema(self) -> str:
        return mirroring.warehouse_schema(self.schema)

    @property
    def unique_id(self) -> str:
        return f"{self.warehouse_schema}.{self.name}"


@dataclass(frozen=True)
class Partner:
    name: str
    source_type: str | None = None
    source_version: str | None = None
    additional_information: dict[str, Any] | None = None


@dataclass(frozen=True)
class Output:
    """The resolved profile output (target)."""

    profile: str
    target: str
    landing_zone: str = "landing_zone"  # as written; the compiler resolves it
    warehouse: str = "warehouse"
    spark_master: str = "local[*]"
    spark_remote: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    deletion_vectors: bool | None = None  # None: by each table's size (docs/readers.md)
    settle_seconds: float = 0
    threads: int | None = None  # tables mirrored at once by run/mirror; None: the default


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    project_dir: Path
    target_path: str
    output: Output
    partner: Partner | None
    tables: tuple[Table, ...]
    variables: dict[str, Any] = field(default_factory=dict)
    change_data_feed: bool = False  # Delta's change data feed on every table (Fabric's switch)


def is_uri(text: str) -> bool:
    """`s3a://…`, `abfss://…`, `file:///…` are URIs; everything else is a local path."""
    return bool(_URI.match(text))


def resolve_location(text: str, project_dir: Path) -> str:
    """A URI untouched; a path made absolute against the project folder."""
    text = text.strip()
    if is_uri(text):
        return text.rstrip("/")
    return os.path.normpath(os.path.join(str(project_dir), os.path.expanduser(text)))
