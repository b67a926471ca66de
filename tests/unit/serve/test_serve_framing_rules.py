"""The strict body framing of `serve` (mirrorspec.serve.framing) and the names it answers to
(mirrorspec.serve.endpoints, the Host rule shared with `docs serve`)."""

from __future__ import annotations

import pytest

from mirrorspec.security.hosts import host_allowed, host_name
from mirrorspec.serve import endpoints
from mirrorspec.serve.framing import CHUNKED, FramingError, body_length, chunk_end, chunk_size


@pytest.mark.parametrize("lengths, encodings, expected", [
    ([], [], 0), (["5"], [], 5), (["5", "5"], [], 5), (["5, 5"], [], 5), ([" 7 "], [], 7),
    ([], ["chunked"], CHUNKED), ([], ["Chunked "], CHUNKED),
])
def test_body_lengths_read_without_guessing(lengths, encodings, expected):
    assert body_length(lengths, encodings) == expected


@pytest.mark.parametrize("lengths, encodings", [
    (["abc"], []), (["-5"], []), (["+5"], []), (["0x10"], []), (["1_0"], []), ([""], []),
    (["5", "6"], []), (["5, 6"], []), (["٣"], []),  # an Arabic-Indic digit: int() takes it
    (["5"], ["chunked"]), ([], ["gzip"]), ([], ["gzip, chunked"]), ([], ["chunked", "chunked"]),
    ([], ["identity"]),
])
def test_ambiguous_framing_is_refused(lengths, encodings):
    with pytest.raises(FramingError):
        body_length(lengths, encodings)


@pytest.mark.parametrize("line, size", [(b"1a\r\n", 26), (b"0\r\n", 0), (b"A;ext=1\r\n", 10),
                                        (b"10 \r\n", 16), (b"5\n", 5)])
def test_chunk_sizes(line, size):
    assert chunk_size(line) == size


@pytest.mark.parametrize("line", [b"-5\r\n", b"0x10\r\n", b"+5\r\n", b"1_0\r\n", b"\r\n", b"5",
                                  b"g\r\n", b"1" * 17 + b"\r\n", b" \r\n"])
def test_bad_chunk_sizes_are_refused(line):
    with pytest.raises(FramingError):
        chunk_size(line)


def test_chunk_data_ends_with_crlf():
    chunk_end(b"\r\n")
    with pytest.raises(FramingError):
        chunk_end(b"xx\r\n")


def test_served_names_and_their_routes():
    allowed = endpoints.served_hosts("127.0.0.1", ["proxy.example"])
    for header in ("127.0.0.1:8443", "localhost", "[::1]:443", "onelake.dfs.fabric.microsoft.com",
                   "ONELAKE.BLOB.FABRIC.MICROSOFT.COM.", "api.fabric.microsoft.com:443",
                   "proxy.example"):
        assert host_allowed(header, allowed), header
    for header in ("rebind.attacker.example", "onelake.dfs.fabric.microsoft.com.evil",
                   "localhost.evil", "x"):
        assert not host_allowed(header, allowed), header
    assert host_name("[::1]:8443") == "::1" and host_name("LocalHost.:80") == "localhost"
    assert [endpoints.kind_of(n) for n in (
        "onelake.dfs.fabric.microsoft.com", "onelake.blob.fabric.microsoft.com",
        "westus-onelake.dfs.fabric.microsoft.com", "api.fabric.microsoft.com", "127.0.0.1",
        "localhost", "proxy.example")] == ["dfs", "blob", "dfs", "api", None, None, None]
    names = endpoints.certificate_names("127.0.0.1", ["proxy.example"])
    assert set(endpoints.FABRIC_HOSTS) <= set(names) and "proxy.example" in names
