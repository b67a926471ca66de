"""The example project on a real Spark standalone cluster (a master and two workers on 127.0.0.1)
gives exactly the tables a local-mode run gives; the YAML is unchanged, only the profile target."""

from __future__ import annotations

import shutil

from conftest import (copy_example_project, describe, local_output, read_tables, run_cli,
                      seed_landing_zone, write_profiles)


def cluster_output(master_url: str) -> dict:
    return {"landing_zone": "landing_zone_cluster", "warehouse": "warehouse_cluster",
            "spark": {"master": master_url,
                      "conf": {"spark.driver.host": "127.0.0.1",
                               "spark.driver.bindAddress": "127.0.0.1",
                               "spark.driver.memory": "1g",
                               "spark.executor.memory": "768m",
                               "spark.cores.max": "2",
                               "spark.sql.shuffle.partitions": "2",
                               "spark.ui.enabled": "false"}}}


def test_run_on_standalone_cluster_equals_local_run(standalone_cluster, reference_run, tmp_path):
    project = copy_example_project(tmp_path / "project")
    write_profiles(project, {"local": local_output("local"),
                             "cluster": cluster_output(standalone_cluster.master_url)})
    seed_landing_zone(project, "landing_zone_cluster")
    apps_before = len(standalone_cluster.completed_apps())

    result = run_cli(["run", "--project-dir", str(project), "--target", "cluster"], cwd=project)

    assert result.returncode == 0, describe(result)
    # The driver really ran its jobs on the cluster: the master lists the finished application.
    apps = standalone_cluster.wait_completed(apps_before + 1)
    assert len(apps) == apps_before + 1, apps
    assert {app["name"] for app in apps} == {"mirrorspec"}
    assert read_tables(project / "warehouse_cluster") == reference_run
    # Processed files moved exactly as locally: the last file of each table stays in place.
    for table in ("sales.schema/customers", "sales.schema/orders"):
        folder = project / "landing_zone_cluster" / table
        assert sorted(p.name for p in folder.glob("*.parquet")) == ["00000000000000000002.parquet"]
        assert (folder / "_ProcessedFiles" / "00000000000000000001.parquet").is_file()


def test_mirror_command_on_standalone_cluster(standalone_cluster, reference_run, tmp_path):
    """`mirrorspec mirror --master spark://…` on a landing zone another publisher wrote."""
    project = copy_example_project(tmp_path / "project")
    write_profiles(project, {"local": local_output("local")})
    compiled = run_cli(["compile", "--project-dir", str(project), "--target", "local"],
                       cwd=project)
    assert compiled.returncode == 0, describe(compiled)
    landing = project / "landing_zone_mirror"
    # The compiled _metadata.json files, then the sample data files beside them.
    shutil.copytree(project / "target" / "landing_zone", landing)
    seed_landing_zone(project, "landing_zone_mirror")

    apps_before = len(standalone_cluster.completed_apps())
    result = run_cli(["mirror", "--landing-zone", str(landing),
                      "--warehouse", str(project / "warehouse_mirror"),
                      "--master", standalone_cluster.master_url], cwd=project,
                     env={"SPARK_LOCAL_IP": "127.0.0.1"})  # the driver on loopback too

    assert result.returncode == 0, describe(result)
    assert len(standalone_cluster.wait_completed(apps_before + 1)) == apps_before + 1
    assert read_tables(project / "warehouse_mirror") == reference_run
