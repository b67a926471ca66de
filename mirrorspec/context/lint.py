"""`lint`: a landing zone checked against the open-mirroring contract (no JVM), for
`mirrorspec lint` and `mirrorspec.api` (`lint_landing_zone`, `Project.lint`).

The checks are `mirrorspec/landing/lint/`'s; here are where the landing zone and warehouse come
from (the arguments, else the project's) and the verdict: errors fail, warnings too with
`strict` (`LintResult.failed`; `failure` says it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from mirrorspec.base.errors import FailedRun

if TYPE_CHECKING:
    from mirrorspec.landing.lint import LintResult


def lint(landing_zone: str, tables: Sequence[str] = (), warehouse: str | None = None,
         strict: bool = False) -> "LintResult":
    """The findings of `landing_zone` (only `tables` when given: schema.table, names or globs),
    with the checks against the mirrored tables in `warehouse` when given."""
    from mirrorspec.landing.lint import lint_landing_zone

    return lint_landing_zone(landing_zone, tuple(tables), warehouse=warehouse, strict=strict)


def lint_project(plan: Any, tables: Sequence[str] = (), with_warehouse: bool = True,
                 strict: bool = False) -> "LintResult":
    """`lint` of the project's landing zone (and its warehouse, with `with_warehouse`)."""
    return lint(plan.landing_zone, tables, plan.warehouse if with_warehouse else None, strict)


def failure(result: "LintResult", strict: bool) -> FailedRun | None:
    """The FailedRun a lint ends with: any error, or with `strict` any warning; else None."""
    if result.failed(strict):
        errors, warnings = result.count("error"), result.count("warning")
        return FailedRun(f"lint found {errors} error(s) and {warnings} warning(s)"
                         + (" (--strict: warnings fail)" if strict and not errors else ""))
    return None
