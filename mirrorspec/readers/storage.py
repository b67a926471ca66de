"""delta-rs storage options from the profile's Spark conf, so `show` reads an object-store
warehouse with the credentials and endpoint `run` uses (Hadoop s3a / ABFS keys → object_store
keys). Anything not mapped here is still read from the environment (AWS_*, AZURE_*) by delta-rs.
"""

from __future__ import annotations

from typing import Mapping

_S3A = "spark.hadoop.fs.s3a."
_S3A_KEYS = {"access.key": "AWS_ACCESS_KEY_ID", "secret.key": "AWS_SECRET_ACCESS_KEY",
             "session.token": "AWS_SESSION_TOKEN", "endpoint.region": "AWS_REGION"}
_ABFS_KEY = "spark.hadoop.fs.azure.account.key."


def storage_options(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """object_store options for delta-rs from Spark conf (secrets already resolved)."""
    conf = {k: str(v) for k, v in spark_conf.items()}
    options: dict[str, str] = {}
    for suffix, name in _S3A_KEYS.items():
        if _S3A + suffix in conf:
            options[name] = conf[_S3A + suffix]
    ssl = conf.get(_S3A + "connection.ssl.enabled", "true").lower() != "false"
    endpoint = conf.get(_S3A + "endpoint")
    if endpoint:
        if "://" not in endpoint:
            endpoint = ("https://" if ssl else "http://") + endpoint
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    if conf.get(_S3A + "path.style.access", "").lower() == "true":
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    for key, value in conf.items():
        if key.startswith(_ABFS_KEY):
            host = key[len(_ABFS_KEY):]
            options["AZURE_STORAGE_ACCOUNT_NAME"] = host.split(".", 1)[0]
            options["AZURE_STORAGE_ACCOUNT_KEY"] = value
    return options


def plan_storage_options(plan) -> dict[str, str]:
    """The storage options for the tables of a compiled plan (None or a local warehouse: none)."""
    if plan is None or "://" not in plan.warehouse:
        return {}
    from mirrorspec.artifacts.plan import resolve_secrets

    return storage_options(resolve_secrets(dict(plan.spark.conf)))
