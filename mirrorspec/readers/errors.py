"""Errors of the read path, shared by the delta-rs reader and the Spark fallback."""

from __future__ import annotations

from mirrorspec.base.errors import InspectError

__all__ = ["InspectError", "DeltaRsUnsupported"]


class DeltaRsUnsupported(Exception):
    """delta-rs can't read this table or evaluate this request; the caller falls back to Spark."""
