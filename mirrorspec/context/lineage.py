"""OpenLineage events of `run` and `mirror` passes: the emitter a command asked for, and one
pass's events (mirrorspec/observe/lineage.py)."""

from __future__ import annotations

from typing import Any


def open_lineage(url: str | None, namespace: str | None, console: Any):
    """The LineageEmitter for `url` (`--openlineage-url`), or None when there is none."""
    if not url:
        return None
    from mirrorspec.observe.lineage import LineageEmitter

    return LineageEmitter(url, namespace or "mirrorspec", console)


def send_run_pass(lineage, plan: Any, results: Any) -> None:
    """The run events of one `run` pass (its RunResults against the plan)."""
    if lineage is not None:
        from mirrorspec.observe.samples import samples_from_run

        lineage.emit_pass(samples_from_run(plan, results))


def send_mirror_pass(lineage, result: Any) -> None:
    """The run events of one `mirror` pass (the engine's MirrorResult)."""
    if lineage is not None:
        from mirrorspec.observe.samples import samples_from_mirror

        lineage.emit_pass(samples_from_mirror(result.tables))
