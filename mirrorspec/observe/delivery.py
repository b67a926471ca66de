"""Delivering events off the pass's path: an HTTP POST bounded in total time, and a bounded
background queue that sends them one by one (stdlib only).

A collector that answers one byte every few seconds stays under any per-read timeout; the POST
goes through `base/deadline_http.py`, where every step of a request (connect, TLS, send, each
read) gets only what is left of one deadline, so an event takes at most `seconds` in all. The
queue keeps the pass from waiting at all: `put` never blocks (a full queue drops the event and
counts it), and `close` waits a bounded time for what is queued.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable

from mirrorspec.base.deadline_http import RequestError, request


class DeliveryError(OSError):
    """The collector refused the event (an HTTP status of 300 or more)."""


def post(url: str, body: bytes, headers: dict[str, str], seconds: float) -> int:
    """POST `body` to `url` within `seconds` in total; returns the HTTP status (< 300), else
    raises DeliveryError, TimeoutError or another OSError."""
    try:
        status = request("POST", url, seconds, headers, body, read_body=False).status
    except RequestError as exc:
        raise DeliveryError(str(exc)) from None
    if status >= 300:
        raise DeliveryError(f"the collector answered HTTP {status}")
    return status


class BackgroundSender:
    """Sends queued items with `deliver` on one daemon thread, in order.

    `put` never waits: when `size` items are already waiting the item is dropped and counted
    (`on_drop(count)` once, from the caller's thread). A `deliver` that raises calls
    `on_error(exc)` and the sender goes on with the next item. `close(seconds)` waits at most
    that long for the queue to empty and returns how many items were left unsent."""

    def __init__(self, deliver: Callable[[Any], None], size: int,
                 on_error: Callable[[BaseException], None],
                 on_drop: Callable[[int], None]):
        self._deliver, self._on_error, self._on_drop = deliver, on_error, on_drop
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=size)
        self._idle = threading.Condition()
        self._busy = 0  # items taken by the thread and not finished yet
        self.dropped = 0
        self.delivered = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mirrorspec-lineage",
                                        daemon=True)  # a collector never keeps the process
        self._thread.start()

    def put(self, item: Any) -> bool:
        """Queue `item`; False (dropped, counted) when the queue is full or closed."""
        if not self._closed:
            with self._idle:
                try:
                    self._queue.put_nowait(item)
                    self._busy += 1
                    return True
                except queue.Full:
                    pass
        self.dropped += 1
        if self.dropped == 1:
            self._on_drop(self.dropped)
        return False

    def flush(self, seconds: float) -> bool:
        """Wait at most `seconds` until everything queued was delivered (or failed)."""
        end = time.monotonic() + seconds
        with self._idle:
            while self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, seconds: float) -> int:
        """Stop taking items, wait at most `seconds` for the queue; how many were left."""
        self._closed = True
        self.flush(seconds)
        with self._idle:
            return self._busy

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                self._deliver(item)
                self.delivered += 1
            except Exception as exc:  # noqa: BLE001 - a lost event is reported, never raised
                self._on_error(exc)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()
