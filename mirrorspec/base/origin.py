"""Where a setting came from, so a message names it truthfully: the option on the command line,
its environment variable, an API argument, or the default.

A value that crossed the command line keeps its origin as it travels through the layers that
only pass it on (`Given` is a `str`); the layer that reports a problem with it asks `origin_of`.
"""

from __future__ import annotations

from typing import Any


class Given(str):
    """A setting's text that remembers where it came from (`origin`: `--profiles-dir`,
    `MIRRORSPEC_PROFILES_DIR`, `Project(profiles_dir=…)`, `the current folder`…)."""

    origin: str

    def __new__(cls, value: str, origin: str) -> "Given":
        given = super().__new__(cls, value)
        given.origin = origin
        return given

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (Spark, multiprocessing) with its origin
        return (Given, (str(self), self.origin))


def origin_of(value: Any, fallback: str) -> str:
    """The origin `value` carries, else `fallback` (a plain value from a library caller)."""
    origin = getattr(value, "origin", None)
    return origin if isinstance(origin, str) and origin else fallback
