"""JDBC URLs are printed with every credential form hidden (`reconcile` once printed
`jdbc:mysql://alice:S3CR3T@…` and `jdbc:oracle:thin:alice/S3CR3T@…` as given)."""

from __future__ import annotations

import pytest

from mirrorspec.security.jdbc_urls import redact


@pytest.mark.parametrize("url,shown", [
    ("jdbc:mysql://alice:S3CR3T@db.example:3306/shop", "jdbc:mysql://***@db.example:3306/shop"),
    ("jdbc:mysql://alice:p@ss@db/shop", "jdbc:mysql://***@db/shop"),
    ("jdbc:postgresql://alice@db/shop", "jdbc:postgresql://***@db/shop"),
    ("jdbc:oracle:thin:alice/S3CR3T@db:1521/svc", "jdbc:oracle:thin:***/***@db:1521/svc"),
    ("jdbc:oracle:thin:alice/S3CR3T@//db:1521/svc", "jdbc:oracle:thin:***/***@//db:1521/svc"),
    ("jdbc:postgresql://db:5432/shop?user=alice&password=S3CR3T&ssl=true",
     "jdbc:postgresql://db:5432/shop?user=***&password=***&ssl=true"),
    ("jdbc:postgresql://db/shop?sslpassword=S3CR3T&sslmode=verify-full",
     "jdbc:postgresql://db/shop?sslpassword=***&sslmode=verify-full"),
    ("jdbc:sqlserver://db:1433;databaseName=shop;user=alice;password=S3CR3T;encrypt=true",
     "jdbc:sqlserver://db:1433;databaseName=shop;user=***;password=***;encrypt=true"),
    ("jdbc:sqlserver://db;UID=alice;PWD=S3CR3T", "jdbc:sqlserver://db;UID=***;PWD=***"),
    ("jdbc:databricks://h:443;AuthMech=3;UID=token;PWD=dapi123",
     "jdbc:databricks://h:443;AuthMech=3;UID=***;PWD=***"),
    ("No suitable driver found for jdbc:mysql://alice:S3CR3T@db/shop",
     "No suitable driver found for jdbc:mysql://***@db/shop"),
])
def test_every_credential_form_is_hidden(url, shown):
    assert redact(url) == shown
    assert "S3CR3T" not in redact(url) and "alice" not in redact(url)


@pytest.mark.parametrize("url", ["jdbc:postgresql://127.0.0.1:5432/postgres",
                                 "jdbc:oracle:thin:@//db:1521/svc",
                                 "jdbc:sqlserver://db:1433;databaseName=shop;encrypt=true"])
def test_urls_without_credentials_are_unchanged(url):
    assert redact(url) == url


def test_the_values_read_from_the_environment_are_hidden_too():
    assert redact('FATAL: password authentication failed for user "mirror-x"',
                  ["mirror-x", None]) == 'FATAL: password authentication failed for user "***"'
