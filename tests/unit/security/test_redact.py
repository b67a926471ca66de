"""mirrorspec.security.redact: the one rule that keeps credentials out of logs, reports and error bodies."""

from __future__ import annotations

import pytest

from mirrorspec.security.redact import redact_fields, redact_text


@pytest.mark.parametrize("text, secret", [
    ("/lz/x.csv?sv=2021&sig=S3CRET%2Fabc&se=2026", "S3CRET"),
    ("https://h/onelake/ws/db/Files/x?sp=r&sig=S3CRET", "S3CRET"),
    ("/lz/x.csv?%73ig=S3CRET", "S3CRET"),  # the name percent-encoded
    ("/lz/x.csv?%2573ig=S3CRET", "S3CRET"),  # and encoded twice
    ("/lz/a%3Fsig%3DS3CRET%26sv%3D1", "S3CRET"),  # the separators encoded: a name in a path
    ("x-ms-rename-source '/ws/db/Files/LandingZone/t/_1.tmp?sig=S3CRET' does not exist", "S3CRET"),
    ("/token?client_secret=S3CRET&grant_type=client_credentials", "S3CRET"),
    ("?access_token=S3CRET", "S3CRET"), ("?refresh_token=S3CRET", "S3CRET"),
    ("?client_assertion=S3CRET", "S3CRET"), ("?code=S3CRET", "S3CRET"),
    ("?api_key=S3CRET", "S3CRET"), ("?password=S3CRET", "S3CRET"), ("&token=S3CRET", "S3CRET"),
    ("Authorization: Bearer eyS3CRET.x.y", "eyS3CRET"), ("SharedKey onelake:S3CRET=", "S3CRET"),
])
def test_credential_values_are_redacted_in_every_form(text, secret):
    redacted = redact_text(text)
    assert secret not in redacted and "REDACTED" in redacted


def test_ids_times_and_ordinary_parameters_stay_readable():
    text = "/lz/x?sv=2021-06-08&se=2026-01-01&skoid=abc&sktid=def&resource=file&position=5"
    assert redact_text(text) == text
    assert redact_text("?sig=a&keep=1") == "?sig=REDACTED&keep=1"


def test_fields_are_redacted_nested_too():
    fields = {"path": "/x?sig=S", "finding": {"message": "a ?sig=S b"}, "n": 3, "l": ["&token=S"]}
    assert redact_fields(fields) == {"path": "/x?sig=REDACTED",
                                     "finding": {"message": "a ?sig=REDACTED b"}, "n": 3,
                                     "l": ["&token=REDACTED"]}
