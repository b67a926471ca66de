"""Where a request body ends (RFC 9112 §6): the strict reading a hardened server makes.

Anything ambiguous is a `FramingError` (answered 400, connection closed), never a guess: a
Content-Length that is not digits, two of them that disagree, Content-Length together with
Transfer-Encoding, a transfer coding other than `chunked`, a chunk size that is not plain hex,
chunk data not followed by CRLF. A lenient reading here is how a body gets parsed as the next
request (request smuggling).
"""

from __future__ import annotations

import re
import socket
import time

CHUNKED = -1  # body_length's answer for a chunked body
MAX_LINE = 1 << 16  # longest chunk-size or trailer line read
MAX_TRAILERS = 100  # as http.client's limit on header fields
_DIGITS = re.compile(rb"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")  # 16 hex digits: 2**64, far above any --max-body
# A refusal that leaves a body unread (413, a foreign Host, …) closes the connection; before
# closing, the rest of the body is read and dropped for at most this long and this much, so a
# client that sends its whole body before reading the answer gets the answer, not a reset.
LINGER_SECONDS = 2.0
LINGER_BYTES = 64 << 20
LINGER_CHUNK = 1 << 20


class FramingError(ValueError):
    """The request's body boundaries can't be read without guessing."""


def body_length(content_lengths: list[str], transfer_encodings: list[str]) -> int:
    """The body's length from all its Content-Length and Transfer-Encoding values, or
    CHUNKED."""
    if transfer_encodings:
        if content_lengths:
            raise FramingError("Content-Length together with Transfer-Encoding is ambiguous: "
                               "send one of them")
        codings = [c.strip().lower() for value in transfer_encodings for c in value.split(",")]
        if codings != ["chunked"]:
            raise FramingError(f"Transfer-Encoding {', '.join(transfer_encodings)!r} is not "
                               "supported: send 'chunked' or a Content-Length")
        return CHUNKED
    if not content_lengths:
        return 0
    values = {v.strip() for value in content_lengths for v in value.split(",")}
    if len(values) != 1:
        raise FramingError(f"Content-Length has several values ({', '.join(content_lengths)}): "
                           "send one")
    value = values.pop()
    if not _DIGITS.fullmatch(value.encode("ascii", "replace")):
        raise FramingError(f"Content-Length {value[:40]!r} is not a number of bytes")
    return int(value)


def chunk_size(line: bytes) -> int:
    """The size on a chunk-size line (`1a;ext=v\\r\\n`)."""
    if not line.endswith(b"\n") or len(line) > MAX_LINE:
        raise FramingError(f"the chunk size line {line[:40]!r} is not terminated")
    size = line.split(b";", 1)[0].rstrip(b"\r\n").strip(b" \t")
    if not _HEX.fullmatch(size):
        raise FramingError(f"the chunk size {size[:40]!r} is not hexadecimal digits")
    return int(size, 16)


def chunk_end(line: bytes) -> None:
    """The CRLF after a chunk's data."""
    if line not in (b"\r\n", b"\n"):
        raise FramingError(f"the chunk data is followed by {line[:40]!r}, not CRLF")


def linger(sock: socket.socket) -> None:
    """After an answer that left the body unread: end the answer (SHUT_WR), then read and drop
    what the client still sends, within LINGER_SECONDS and LINGER_BYTES. Closing a socket with
    unread data resets it, and a client still sending then sees a broken pipe instead of the
    refusal it was sent."""
    deadline, drained = time.monotonic() + LINGER_SECONDS, 0
    try:
        sock.shutdown(socket.SHUT_WR)
        while drained < LINGER_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            data = sock.recv(LINGER_CHUNK)
            if not data:
                break
            drained += len(data)
    except OSError:
        pass  # gone, reset or timed out: closing is all that is left
