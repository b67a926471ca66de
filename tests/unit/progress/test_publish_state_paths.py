"""The publisher state stores feed paths relative to the project, so a project that is moved or
copied (with its warehouse) keeps knowing what it published; older states with absolute paths
are read as they were, and moved along with the project they describe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mirrorspec.artifacts.plan import PLAN_VERSION, Plan, SourceSpec, SparkSpec, TablePlan, TableStep
from mirrorspec.base.files import Files
from mirrorspec.progress.publish import load_state, new_state, save_state, state_file


def project(root: Path, feed: str = "feeds/orders") -> tuple[Plan, TablePlan]:
    table = TablePlan(unique_id="sales.orders", name="orders", schema="sales",
                      warehouse_schema="sales", landing_path=str(root / "lz/sales.schema/orders"),
                      delta_path=str(root / "wh/sales/orders"), metadata={},
                      source=SourceSpec("csv", feed if "://" in feed else str(root / feed)),
                      steps=[TableStep("PublishFeed"), TableStep("MirrorTable")])
    plan = Plan(plan_version=PLAN_VERSION, project_name="shop", project_version="1",
                profile="shop", target="dev", landing_zone=str(root / "lz"),
                warehouse=str(root / "wh"), state_path=str(root / "wh/_mirrorspec"),
                spark=SparkSpec(), partner_events=None, tables=[table],
                project_dir=str(root))
    return plan, table


def published(root: Path, *names: str) -> dict:
    state = new_state(project(root)[1])
    files = [str(root / "feeds/orders" / n) for n in names]
    state["files"] = {f: 1 for f in files}
    state["batches"] = [{"sequence": 1, "files": files, "rows": 3}]
    state["reader"] = {"snapshot": files[-1:], "cutoff": ["0001", files[0], 1, 0]}
    return state


def test_feed_paths_are_stored_relative_to_the_project_and_follow_a_move(tmp_path):
    old = tmp_path / "old" / "shop"
    plan, table = project(old)
    save_state(Files(), plan, table, published(old, "a.csv", "b.csv"))
    text = Path(state_file(plan, table)).read_text()
    assert str(old) not in text and '"./feeds/orders/a.csv"' in text

    new = tmp_path / "new" / "shop"
    shutil.move(str(old), str(new))  # `mv` of the whole project, warehouse inside
    plan, table = project(new)
    assert load_state(Files(), plan, table) | {"held_back": [], "pending": None} == \
        published(new, "a.csv", "b.csv")


def test_an_absolute_state_written_before_is_read_and_moved_with_its_project(tmp_path):
    old = tmp_path / "old" / "shop"
    plan, table = project(old)
    path = Path(state_file(plan, table))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(published(old, "a.csv")))  # how states were written before
    assert load_state(Files(), plan, table)["files"] == {str(old / "feeds/orders/a.csv"): 1}

    new = tmp_path / "copy"
    shutil.copytree(old, new)  # a copy: the original (and its absolute paths) still exist
    plan, table = project(new)
    state = load_state(Files(), plan, table)
    assert state == published(new, "a.csv") | {"held_back": [], "pending": None}
    save_state(Files(), plan, table, state)  # rewritten relative from now on
    assert str(old) not in Path(state_file(plan, table)).read_text()


def test_uris_and_paths_outside_the_project_stay_as_they_are(tmp_path):
    root = tmp_path / "shop"
    plan, table = project(root, feed="s3a://bucket/feeds/orders")
    state = new_state(table)
    outside = str(tmp_path / "elsewhere" / "x.csv")
    state["files"] = {"s3a://bucket/feeds/orders/a.csv": 1, outside: 2}
    save_state(Files(), plan, table, state)
    stored = json.loads(Path(state_file(plan, table)).read_text())
    assert stored["files"] == state["files"]
    assert load_state(Files(), plan, table)["files"] == state["files"]
