"""What a failure that is not the data's is: a storage failure (disk full, permissions, I/O,
in Python or anywhere in a Java exception's cause chain) or Spark's/Delta's own. One line for
the console and the result files; the trace goes to the log file (`mirrorspec.base.logfile`)."""

from __future__ import annotations

from mirrorspec.base.errors import StorageError
from mirrorspec.base.logfile import log_exception

_IO_CLASSES = ("java.io.IOException", "java.io.UncheckedIOException",
               "java.nio.file.FileSystemException")
_IO_WORDS = ("No space left on device", "Disk quota exceeded", "Read-only file system")


def short(exc: BaseException) -> str:
    """The first line of the root cause (the Java one of a Py4J error), at most 500 chars."""
    java = getattr(exc, "java_exception", None)
    if java is not None:  # Py4JJavaError: the Java message says what went wrong
        try:
            cause = java
            while cause.getCause() is not None:
                cause = cause.getCause()
            exc = RuntimeError(str(cause.toString()))
        except Exception:  # noqa: BLE001, S110 - a dead gateway: the Python message is kept
            pass
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first[:500]


def storage_cause(exc: BaseException) -> str | None:
    """The one-line I/O cause of `exc` (an OSError, or a Java IOException anywhere in a Py4J
    error's cause chain, or a task failure whose message says the disk is full), else None."""
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            return storage_cause(current)
        found = _java_io_cause(getattr(current, "java_exception", None))
        if found:
            return found
        current = current.__cause__ or current.__context__
    text = str(exc)
    return next((word for word in _IO_WORDS if word in text), None)


def _java_io_cause(java) -> str | None:
    if java is None:
        return None
    try:
        cause, depth = java, 0
        while cause is not None and depth < 50:
            text = str(cause.toString())
            if any(word in text for word in _IO_WORDS) or _is_io(cause):
                return text.splitlines()[0][:500]
            cause, depth = cause.getCause(), depth + 1
    except Exception:  # noqa: BLE001 - a dead gateway: not known to be storage
        return None
    return None


def _is_io(throwable) -> bool:
    kind = throwable.getClass()
    while kind is not None:
        if str(kind.getName()) in _IO_CLASSES:
            return True
        kind = kind.getSuperclass()
    return False


def as_storage_error(exc: BaseException, context: str, what: str,
                     after: str = "") -> StorageError | None:
    """`exc` as a StorageError: "`what`: cause; `after`; details in LOG" (the trace logged
    under `context`), or None when it is not a storage failure."""
    cause = storage_cause(exc)
    if cause is None:
        return None
    log = log_exception(context, exc)
    return StorageError(f"{what}: {cause}" + (f"; {after}" if after else "")
                        + f"; details in {log}", getattr(exc, "filename", None),
                        hint="free space or fix the storage, then run again; the next pass "
                             "finishes what this one could not")
