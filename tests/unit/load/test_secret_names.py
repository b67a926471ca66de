"""The value rule that tells a credential from a path (`secret_names.literal_secrets`)."""

from __future__ import annotations

import pytest

from mirrorspec.load.secret_names import literal_secrets, secret_reason

ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
KEYS = [
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # AWS's documentation example secret key
    ACCOUNT_KEY,  # Azurite's well-known account key (base64 with `/`)
    "/" + ACCOUNT_KEY[1:],  # a base64 key that happens to start with `/`
    "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA",
]
PATHS = [
    "/tmp/jitA/test_maintain_command_reports_0/shop/warehouse",
    "/data/Warehouse2024/Projects/Shop_Mirror_Q3_2024_final/landing",
    "./LandingZone/Project_2024_Q3_ShopMirror_Region42/tables",
    "landing/Shop_Mirror_Q3_2024_Region42_EuropeWest/tables",
    "abfss://Workspace42@onelake.dfs.fabric.microsoft.com/ShopMirror2024Q3Lakehouse01/Files",
    "C:\\Data\\Warehouse2024\\Shop_Mirror_Q3_2024_final\\landing",
]


@pytest.mark.parametrize("value", KEYS)
def test_a_key_is_a_credential(value):
    assert secret_reason("WAREHOUSE", value) == "its value looks like a credential"
    assert list(literal_secrets({"conf": {"k": value}})) == [("conf", "k")]


@pytest.mark.parametrize("value", PATHS)
def test_a_path_with_long_mixed_folders_is_not(value):
    assert secret_reason("WAREHOUSE", value) is None
    assert list(literal_secrets({"warehouse": value})) == []


def test_a_key_inside_a_path_segment_still_is():
    assert list(literal_secrets({"warehouse": f"/lake/{KEYS[3]}/x"})) == [("warehouse",)]
