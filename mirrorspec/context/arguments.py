"""Argument checks, once for both doors: a bad value is a UsageError naming the argument and
what to give, raised before any work starts.

The command line's values arrive typed by click, so these catch what only a Python caller can
get wrong (a list where a str goes, 0 threads, a missing folder); the rules that bind two
values (`version` or `timestamp`, not both) hold for both doors, each spelling the names its
own way (`--version`, `show(version=…)`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, cast

from mirrorspec.base.errors import InspectError, MirrorspecError, UsageError

EventCallback = Callable[[dict[str, Any]], None]
"""Gets every progress and log event as a dict (the `--log-format json` object)."""


def selectors(value: Any, name: str) -> tuple[str, ...]:
    """`select`/`exclude`: a string ("tag:a sales.*") or a sequence of strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise UsageError(f"{name}={value!r}: give a selector string or a list of them",
                     hint=f"e.g. {name}='sales.*' or {name}=['tag:nightly', 'orders']")


def positive(value: Any, name: str) -> int:
    """A whole number of at least 1 (threads)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name}={value!r}: give a whole number of at least 1")
    return int(value)


def optional_positive(value: Any, name: str) -> int | None:
    """None (the default applies) or a whole number of at least 1."""
    return None if value is None else positive(value, name)


def flag(value: Any, name: str) -> bool:
    """True or False, nothing that merely looks like it."""
    if not isinstance(value, bool):
        raise UsageError(f"{name}={value!r}: give True or False")
    return value


def optional_flag(value: Any, name: str) -> bool | None:
    """None (as it is) or True/False."""
    return None if value is None else flag(value, name)


def path(value: Any, name: str, optional: bool = False) -> str | None:
    """A path argument (str or os.PathLike) as a str; None stays None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise UsageError(f"{name}={value!r}: give a path (a str or pathlib.Path)")
    return str(os.fspath(value))


def text(value: Any, name: str, what: str, optional: bool = False) -> str | None:
    """A string argument (`what` says what it names); None stays None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{name}={value!r}: give {what} as a str")
    return value


def hours(value: Any, name: str) -> float | None:
    """None or a number of hours >= 0 (a VACUUM retention)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise UsageError(f"{name}={value!r}: give a number of hours (0 or more), or None")
    return float(value)


def choice(value: Any, name: str, choices: Sequence[str]) -> str | None:
    """None or one of `choices`."""
    if value is not None and value not in choices:
        raise UsageError(f"{name}={value!r}: give one of {', '.join(choices)}, or None")
    return value


def key_columns(value: Any, name: str = "key") -> str | None:
    """Key columns: a comma-separated str or a list of column names, as `--key` takes them."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, Sequence) and value and all(
            isinstance(v, str) and v.strip() for v in value):
        return ",".join(value)
    raise UsageError(f"{name}={value!r}: give the key columns as a str ('id,region') or a list "
                     "of names")


def callback(value: Any) -> EventCallback | None:
    """`on_event`: a function taking one dict, or None."""
    if value is not None and not callable(value):
        raise UsageError(f"on_event={value!r}: give a function taking one dict, or None")
    return cast("EventCallback | None", value)


def string_mapping(value: Any, message: str, hint: str | None = None) -> dict[str, Any]:
    """A mapping with str keys (vars, Spark conf); `message` says what was expected."""
    if value is None:
        return {}
    if not (isinstance(value, Mapping) and all(isinstance(k, str) for k in value)):
        raise UsageError(message, hint=hint)
    return dict(value)


def whole(value: Any, call: str, name: str, what: str) -> int | None:
    """None or a whole number >= 0 (a limit, a Delta version); `what` says what to give."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise UsageError(f"{call}({name}={value!r}): give {what}")
    return value


def exclusive(first: Any, second: Any, names: tuple[str, str], call: str = "",
              error: type[MirrorspecError] = UsageError) -> None:
    """At most one of two values that say the same thing (`--version`/`--timestamp`);
    `call` prefixes an API call's name (`show(): `)."""
    if first is not None and second is not None:
        raise error(f"{call}give {names[0]} or {names[1]}, not both")


def state_folder(state: Any) -> str | None:
    """`state`: a previous target/ folder (or its plan.json), absolute; None stays None."""
    if state is None:
        return None
    if not isinstance(state, (str, os.PathLike)) or not Path(state).exists():
        raise UsageError(f"state={state!r}: give a previous target/ folder that exists")
    plan = Path(state) / "plan.json" if Path(state).is_dir() else Path(state)
    if not plan.is_file():
        raise UsageError(f"state={state!r}: no plan.json there",
                         hint="give a previous target/ folder (with plan.json)")
    return str(Path(state).resolve())


def duration(value: Any, name: str = "stale_after") -> timedelta | None:
    """A duration ("15m", a timedelta) longer than 0, or None."""
    from mirrorspec.operate.health import parse_duration

    if value is None or isinstance(value, timedelta):
        if isinstance(value, timedelta) and value.total_seconds() <= 0:
            raise UsageError(f"{name}={value!r} must be longer than 0")
        return value
    if isinstance(value, str):
        return parse_duration(value, name)
    raise UsageError(f"{name}={value!r}: give a duration such as '15m' or a timedelta")


def as_of(timestamp: Any, call: str = "show", name: str = "timestamp") -> datetime | None:
    """A time to read a table as of: a datetime, or an ISO 8601 str read as `show --timestamp`
    reads it (its error names the argument, not the flag)."""
    if timestamp is None or isinstance(timestamp, datetime):
        return timestamp
    if not isinstance(timestamp, str):
        raise UsageError(f"{call}({name}={timestamp!r}): give a datetime or an ISO 8601 str")
    from mirrorspec.readers.delta import parse_timestamp

    try:
        return parse_timestamp(timestamp)
    except InspectError:
        raise UsageError(f"{call}({name}={timestamp!r}): not a date or time",
                         hint="e.g. '2026-01-31' or '2026-01-31T12:00:00Z' (UTC unless it has "
                              "an offset), or a datetime") from None
