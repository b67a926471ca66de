"""Errors of the read path, shared by the delta-rs reader and the Spark fallback."""

from __future__ import annotations

from mirrorspec.errors import MirrorspecError


class InspectError(MirrorspecError):
    """The table can't be read as asked (no Delta table, bad version, bad --where)."""


class DeltaRsUnsupported(Exception):
    """delta-rs can't read this table or evaluate this request; the caller falls back to Spark."""
