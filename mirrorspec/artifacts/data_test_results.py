"""`target/test_results.json`: the results of `mirrorspec test` (dbt's PASS / WARN / FAIL / ERROR),
and the dbt-style name of a data test. Pure Python: the docs site reads them without a JVM;
`spark.ops.datatests` runs the tests."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mirrorspec.openmirroring import mirroring
from mirrorspec.artifacts.plan import TablePlan
from mirrorspec.artifacts.run_results import utc_now

TEST_RESULTS_FILE = "test_results.json"
TEST_TYPES = ("unique", "not_null", "accepted_values", "relationships", "row_count", "freshness")


@dataclass
class DataTestResult:
    """One test on one table."""

    name: str
    table: str
    type: str
    severity: str
    status: str  # pass | warn | fail | error | skipped
    failures: int = 0
    message: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    execution_time: float = 0.0


@dataclass
class TestResults:
    """Every test of an invocation; written to `target/test_results.json`."""

    results: list[DataTestResult] = field(default_factory=list)
    elapsed_time: float = 0.0
    started_at: str = field(default_factory=utc_now)

    __test__ = False  # not a pytest class

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "warn": 0, "fail": 0, "error": 0, "skipped": 0}
        for result in self.results:
            out[result.status] += 1
        return out

    @property
    def failures(self) -> int:
        """Tests that make the invocation fail (FAIL or ERROR)."""
        counts = self.counts()
        return counts["fail"] + counts["error"]

    @property
    def failed(self) -> bool:
        return self.failures > 0

    def raise_if_failed(self) -> "TestResults":
        """FailedRun (a MirrorspecError) when a test FAILed or ERRORed; else self."""
        if self.failed:
            from mirrorspec.base.errors import FailedRun

            raise FailedRun(self.verdict(), hint="see each test in test_results.json")
        return self

    def verdict(self) -> str:
        """'2 data test(s) failed, 1 errored': FAIL (rows broke the rule) and ERROR (the test
        could not run) are told apart."""
        counts = self.counts()
        parts = []
        if counts["fail"]:
            parts.append(f"{counts['fail']} data test(s) failed")
        if counts["error"]:
            parts.append(f"{counts['error']} data test(s) could not run (ERROR)")
        return "; ".join(parts) or "all data tests passed"

    def to_dict(self) -> dict[str, Any]:
        results = []
        for r in self.results:
            doc = asdict(r)
            doc["execution_time"] = round(r.execution_time, 3)
            results.append(doc)
        return {"metadata": {"schema": "mirrorspec/test-results/v1", "generated_at": utc_now()},
                "started_at": self.started_at, "elapsed_time": round(self.elapsed_time, 3),
                "counts": self.counts(), "results": results}

    def write(self, target_dir: str | os.PathLike) -> Path:
        folder = Path(target_dir)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / TEST_RESULTS_FILE
        tmp = folder / f".{TEST_RESULTS_FILE}.tmp"
        tmp.write_text(mirroring.dumps_json(self.to_dict()), encoding="utf-8")
        os.replace(tmp, path)
        return path


def test_name(table: TablePlan, test: dict[str, Any]) -> str:
    """dbt-style name: `<type>_<unique id>[_<columns>]`."""
    kind = test.get("type", "?")
    parts = [kind, table.unique_id]
    columns = test.get("columns") or ([test["column"]] if test.get("column") else [])
    parts.extend(str(c) for c in columns)
    if kind == "relationships" and test.get("to"):
        parts.append(f"to_{test['to']}")
    return "_".join(parts)
