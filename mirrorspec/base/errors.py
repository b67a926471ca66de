"""The error tree, in one module. Every error a user can fix is a MirrorspecError (exit code 1);
the CLI maps anything else to exit code 2. Library code raises these, never SystemExit."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Location:
    """Where something is: a file, optionally a 1-based line/column and a key path.

    `parts` is the key path as a tuple (('tables', 0, 'type')) when known, for code that
    needs to act on the place (the model salvages a table around its schema errors)."""

    file: str
    line: int | None = None
    col: int | None = None
    key_path: str | None = None
    parts: tuple = field(default=(), compare=False, repr=False)

    def __str__(self) -> str:
        text = self.file
        if self.line is not None:
            text += f":{self.line}"
            if self.col is not None:
                text += f":{self.col}"
        if self.key_path:
            text += f": {self.key_path}"
        return text


class MirrorspecError(Exception):
    """Base of every error the user can act on (exit code 1)."""

    exit_code = 1

    def __init__(self, message: str, location: Location | None = None, hint: str | None = None):
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ProjectError(MirrorspecError):
    """The YAML project is invalid. May carry several located problems at once."""

    def __init__(self, message: str, location: Location | None = None, hint: str | None = None,
                 problems: list["MirrorspecError"] | None = None):
        self.problems = list(problems or [])
        super().__init__(message, location, hint)

    def render(self) -> str:
        if not self.problems:
            return super().render()
        lines = [p.render() for p in self.problems]
        return "\n".join(lines) + f"\n{len(self.problems)} error(s) found."


class PlanError(MirrorspecError):
    """target/plan.json is missing, unreadable or of another plan_version."""


class LandingZoneError(MirrorspecError):
    """A landing-zone file is bad: it stops its own table at that file."""

    def __init__(self, message: str, file: str | None = None, row: int | None = None,
                 hint: str | None = None, code: str = "BadFile"):
        self.file = file
        self.row = row
        self.code = code
        loc = Location(file, row) if file else None
        super().__init__(message, loc, hint)


class SourceError(MirrorspecError):
    """A CDC feed file is bad: that table stops and nothing of the batch is published."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 hint: str | None = None):
        self.file = file
        self.line = line
        loc = Location(file, line) if file else None
        super().__init__(message, loc, hint)


class StorageError(MirrorspecError):
    """Reading or writing storage failed (disk full, permissions, an I/O error): not a problem
    with the data. `code` is the errorCode the monitoring JSON and run_results.json carry; the
    full trace is in the log file the message names."""

    code = "StorageError"

    def __init__(self, message: str, path: str | None = None, hint: str | None = None):
        self.path = path
        super().__init__(message, None, hint)


class UsageError(MirrorspecError):
    """A command-line flag or an API argument is invalid (said before any work starts)."""


class SelectionError(MirrorspecError):
    """A selector can't be understood (unknown method, missing --state, …)."""


class InspectError(MirrorspecError):
    """The table can't be read as asked (no Delta table, bad version, bad --where)."""


class DataTestError(MirrorspecError):
    """A data test could not be run (its status is ERROR)."""


class FailedRun(MirrorspecError):
    """Raised by a command whose work finished but where some table failed (exit 1)."""


class StaleMirror(FailedRun):
    """`status --stale-after`: nothing failed, but a table or the replicator is stale (exit 3)."""

    exit_code = 3


class SetupError(MirrorspecError):
    """The installation lacks something mirrorspec needs (e.g. Delta's jars and no Maven)."""
