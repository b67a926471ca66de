"""`mirrorspec retry`: what to run again after the last `run`, `publish` or `build` (pure
Python): the tables that ended `error` or `skipped` in target/run_results.json, with the
options that run had (its threads, --full-refresh, --fail-fast; --vars are never stored)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.artifacts.run_results import read_run_results

RETRIED_STATUSES = ("error", "skipped")
RETRIED_COMMANDS = ("run", "publish", "build")


@dataclass(frozen=True)
class RetrySelection:
    """The command to run again and its selection (`id:` selectors; empty: nothing to do)."""

    command: str
    select: tuple[str, ...]
    threads: int
    full_refresh: bool
    fail_fast: bool

    @property
    def nothing_to_do(self) -> str:
        """What `retry` says (CLI and API alike) when no table is left to run again."""
        return (f"Nothing to retry: no table ended ERROR or SKIPPED in the last "
                f"`{self.command}`")


def retry_selection(target_dir: str | os.PathLike[str]) -> RetrySelection:
    """What the last run_results.json in `target_dir` leaves to retry."""
    doc = read_run_results(target_dir, validate=True)
    command = str(doc.get("command") or "")
    if command not in RETRIED_COMMANDS:
        raise MirrorspecError(f"the last run_results.json in {target_dir} is of `{command}`",
                              hint=f"retry re-runs {', '.join(RETRIED_COMMANDS)}; run one first")
    args: dict[str, Any] = doc.get("args") or {}
    failed = [r["unique_id"] for r in doc.get("results") or []
              if r.get("status") in RETRIED_STATUSES and r.get("unique_id")]
    threads = args.get("threads")
    return RetrySelection(command, tuple(f"id:{u}" for u in failed),
                          threads if isinstance(threads, int) and threads > 0 else 4,
                          bool(args.get("full_refresh")), bool(args.get("fail_fast")))
