"""The tokens serve signs (mirrorspec/serve/tokens.py): what `--require-auth` refuses."""

from __future__ import annotations

import pytest

from mirrorspec.serve.tokens import (FABRIC_AUDIENCES, STORAGE_AUDIENCES, TokenAuthority,
                                     TokenRefused, audience_of)

pytest.importorskip("jwt")


@pytest.fixture(scope="module")
def authority():
    return TokenAuthority()


def test_a_token_it_signed_passes_for_its_audience(authority):
    issued = authority.issue("https://storage.azure.com/.default", "iss", "app")
    assert authority.verify(issued.token, STORAGE_AUDIENCES)["aud"] == "https://storage.azure.com"
    with pytest.raises(TokenRefused, match="Audience validation failed"):
        authority.verify(issued.token, FABRIC_AUDIENCES)


def test_expired_and_foreign_tokens_are_refused(authority):
    expired = authority.issue("https://storage.azure.com", "iss", "app", lifetime=-120)
    with pytest.raises(TokenRefused, match="expired"):
        authority.verify(expired.token, STORAGE_AUDIENCES)
    other = TokenAuthority().issue("https://storage.azure.com", "iss", "app")
    with pytest.raises(TokenRefused, match="not issued by this endpoint"):
        authority.verify(other.token, STORAGE_AUDIENCES)
    with pytest.raises(TokenRefused, match="not well formed"):
        authority.verify("a.b", STORAGE_AUDIENCES)


def test_scopes_and_resources_name_the_same_audience():
    assert audience_of("https://storage.azure.com/.default") == "https://storage.azure.com"
    assert audience_of("https://storage.azure.com/") == "https://storage.azure.com"
