"""Blob leases: acquire, renew, change, release and break (`PUT ?comp=lease`), and the check a
write makes against them, with the Blob service's codes (409 for a lease operation that does not
fit the lease's state, 412 for a write the lease guards). Kept in memory, keyed by path, and
written through to the state file beside the landing zone (persist.py) when the store has one,
with wall-clock times, so a restarted serve knows each lease and when it expires."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from mirrorspec.serve.codes import ServeError

INFINITE = -1


@dataclass
class Lease:
    lease_id: str
    duration: int  # seconds, or INFINITE
    expires: float | None  # clock time; None for an infinite lease
    broken_at: float | None = None  # set by a break: breaking until then, broken after


class Leases:
    """The leases of one endpoint (thread-safe); `clock` (monotonic) and `wall` (epoch seconds)
    are injectable for tests; `state` (persist.StateFile) keeps them across restarts."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, state: Any = None,
                 wall: Callable[[], float] = time.time):
        self._clock, self._wall, self._file = clock, wall, state
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, ...], Lease] = {}
        if state is not None:
            for key, doc in state.all_leases().items():
                lease = self._from_doc(doc)
                if lease is not None:
                    self._by_key[key] = lease

    # --- kept across restarts: each clock time as wall-clock seconds ------------------------
    def _to_wall(self, at: float | None) -> float | None:
        return None if at is None else at - self._clock() + self._wall()

    def _from_wall(self, at: float | None) -> float | None:
        return None if at is None else at - self._wall() + self._clock()

    def _from_doc(self, doc: dict) -> Lease | None:
        try:
            return Lease(str(doc["lease_id"]), int(doc["duration"]),
                         self._from_wall(doc.get("expires")), self._from_wall(doc.get("broken_at")))
        except (KeyError, TypeError, ValueError):
            return None

    def _keep(self, key: tuple[str, ...]) -> None:
        """Write the lease of `key` (or its absence) through to the state file."""
        if self._file is None:
            return
        lease = self._by_key.get(key)
        self._file.put_lease(key, None if lease is None else {
            "lease_id": lease.lease_id, "duration": lease.duration,
            "expires": self._to_wall(lease.expires), "broken_at": self._to_wall(lease.broken_at)})

    def _state(self, lease: Lease | None) -> str:
        """available, leased, expired, breaking or broken."""
        if lease is None:
            return "available"
        now = self._clock()
        if lease.broken_at is not None:
            return "breaking" if now < lease.broken_at else "broken"
        if lease.expires is not None and now >= lease.expires:
            return "expired"
        return "leased"

    def headers(self, key: tuple[str, ...]) -> dict[str, str]:
        """x-ms-lease-state/status/duration for HEAD and GET."""
        with self._lock:
            lease = self._by_key.get(key)
            state = self._state(lease)
        out = {"x-ms-lease-state": state,
               "x-ms-lease-status": "locked" if state in ("leased", "breaking") else "unlocked"}
        if state == "leased" and lease is not None:
            out["x-ms-lease-duration"] = "infinite" if lease.duration == INFINITE else "fixed"
        return out

    def act(self, key: tuple[str, ...], action: str, lease_id: str | None, proposed: str | None,
            duration: str | None, break_period: str | None) -> tuple[int, dict[str, str]]:
        """One Lease Blob call: (status, response headers) or a ServeError."""
        with self._lock:
            answer = self._act(key, action, lease_id, proposed, duration, break_period)
            self._keep(key)
            return answer

    def _act(self, key: tuple[str, ...], action: str, lease_id: str | None,
             proposed: str | None, duration: str | None,
             break_period: str | None) -> tuple[int, dict[str, str]]:
        """`act` under the lock."""
        lease = self._by_key.get(key)
        state = self._state(lease)
        now = self._clock()
        if action == "acquire":
            seconds = _duration(duration)
            if state == "breaking":
                raise ServeError("lease_breaking", "the lease is breaking")
            if state == "leased" and lease is not None and lease.lease_id != (proposed or ""):
                raise ServeError("lease_present", "there is already a lease on the blob")
            new_id = proposed or str(uuid.uuid4())
            self._by_key[key] = Lease(new_id, seconds,
                                      None if seconds == INFINITE else now + seconds)
            return 201, {"x-ms-lease-id": new_id}
        if action == "break":
            if lease is None or state in ("available", "expired"):
                raise ServeError("lease_not_present", "there is no lease to break")
            period = _break_period(break_period)
            if state == "leased":
                # unspecified: a fixed lease runs out its time, an infinite one breaks now
                if lease.expires is None:
                    wait = period or 0.0
                else:
                    remaining = lease.expires - now
                    wait = remaining if period is None else min(period, remaining)
                lease.broken_at = now + max(0.0, wait)
                lease.expires = None
            left = max(0, int(round((lease.broken_at or now) - now)))
            return 202, {"x-ms-lease-time": str(left)}
        if not lease_id:
            raise ServeError("invalid_header", f"lease action {action} needs x-ms-lease-id")
        if lease is None or state == "available":
            raise ServeError("lease_not_present", f"there is no lease to {action}")
        if lease.lease_id != lease_id:
            raise ServeError("lease_id_mismatch", f"the lease ID given does not match the "
                             f"blob's lease ({action})")
        if action == "renew":
            if state in ("breaking", "broken"):
                raise ServeError("lease_broken", "the lease is broken and cannot be renewed")
            lease.expires = None if lease.duration == INFINITE else now + lease.duration
            return 200, {"x-ms-lease-id": lease.lease_id}
        if action == "release":
            del self._by_key[key]
            return 200, {}
        if action == "change":
            if not proposed:
                raise ServeError("invalid_header", "lease change needs x-ms-proposed-lease-id")
            if state == "breaking":
                raise ServeError("lease_breaking_change", "the lease is breaking")
            if state in ("broken", "expired"):
                raise ServeError("lease_not_present", "there is no active lease to change")
            lease.lease_id = proposed
            return 200, {"x-ms-lease-id": proposed}
        raise ServeError("invalid_header", f"x-ms-lease-action {action!r} is not acquire, "
                         "renew, change, release or break")

    def check_write(self, key: tuple[str, ...], lease_id: str | None) -> None:
        """A write to `key` with `lease_id` (x-ms-lease-id or None): 412 unless it fits."""
        with self._lock:
            lease = self._by_key.get(key)
            state = self._state(lease)
        if state in ("leased", "breaking") and lease is not None:
            if not lease_id:
                raise ServeError("lease_id_missing", "there is a lease on the blob and no lease "
                                 "ID was given")
            if lease_id != lease.lease_id:
                raise ServeError("lease_mismatch_write", "the lease ID given does not match "
                                 "the blob's lease")
        elif lease_id and not (lease is not None and lease.lease_id == lease_id):
            raise ServeError("lease_not_present_write", "there is no lease on the blob, but a "
                             "lease ID was given")

    def drop(self, key: tuple[str, ...]) -> None:
        """The path was deleted or renamed away: its lease (and those under it) go."""
        with self._lock:
            for k in [k for k in self._by_key if k[: len(key)] == key]:
                del self._by_key[k]
                self._keep(k)


def _duration(value: str | None) -> int:
    try:
        seconds = int(value if value is not None else INFINITE)
    except ValueError:
        seconds = 0
    if seconds != INFINITE and not 15 <= seconds <= 60:
        raise ServeError("invalid_header", f"x-ms-lease-duration {value!r} is not -1 or 15..60")
    return seconds


def _break_period(value: str | None) -> float | None:
    if value is None or value == "":
        return None
    try:
        seconds = int(value)
    except ValueError:
        seconds = -1
    if not 0 <= seconds <= 60:
        raise ServeError("invalid_header", f"x-ms-lease-break-period {value!r} is not 0..60")
    return float(seconds)
