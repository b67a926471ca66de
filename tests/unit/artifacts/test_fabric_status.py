"""One mapping from a run result to the table's Fabric-style status
(`run_results.fabric_status`), read the same by the OpenLineage events, the metrics endpoint
and tables.json: a `skipped` table did not run, so it keeps the status it had everywhere
(Fabric's TableMirroringStatus has no skipped state, and it did not replicate)."""

from __future__ import annotations

import pytest

from mirrorspec.observe.samples import samples_from_run
from mirrorspec.artifacts.plan import Plan, SparkSpec, TablePlan
from mirrorspec.artifacts.run_results import RunResults, TableRunResult, fabric_status

pytest.importorskip("prometheus_client")


class _Console:
    def info(self, *args, **kwargs):
        pass

    warning = info


def _plan() -> Plan:
    return Plan(plan_version=1, project_name="p", project_version="1", profile="p",
                target="dev", landing_zone="/lz", warehouse="/wh", state_path="/state",
                spark=SparkSpec(), partner_events=None,
                tables=[TablePlan(unique_id="dbo.t", name="t", schema=None,
                                  warehouse_schema="dbo", landing_path="/lz/t",
                                  delta_path="/wh/dbo/t", metadata={})])


@pytest.mark.parametrize("result,expected", [
    (TableRunResult("dbo.t", status="success", mirror_status="Replicating"), "Replicating"),
    (TableRunResult("dbo.t", status="success"), "Replicating"),  # published only
    (TableRunResult("dbo.t", status="waiting", mirror_status="Waiting"), "Waiting"),
    (TableRunResult("dbo.t", status="not_started"), "NotStarted"),
    (TableRunResult("dbo.t", status="error", mirror_status="Replicating"), "Failed"),
    (TableRunResult("dbo.t", status="skipped"), None),
])
def test_lineage_and_metrics_read_a_result_the_same(result, expected):
    from prometheus_client import generate_latest

    from mirrorspec.operate.metrics import WatchMetrics

    assert fabric_status(result) == expected
    samples = samples_from_run(_plan(), RunResults(command="run", args={}, results=[result]))
    assert [s.status for s in samples] == ([] if expected is None else [expected])
    metrics = WatchMetrics(0, _Console())
    try:
        metrics.observe("dbo.t", "Replicating")  # the pass before
        metrics.observe("dbo.t", fabric_status(result))
        text = generate_latest(metrics.registry).decode()
    finally:
        metrics.close()
    current = [line for line in text.splitlines()
               if line.startswith("mirrorspec_table_status{") and line.endswith(" 1.0")]
    assert current == [f'mirrorspec_table_status{{status="{expected or "Replicating"}",'
                       f'table="dbo.t"}} 1.0']
    assert "Skipped" not in text
