"""Lease Blob as the Blob service answers it: acquire/renew/change/release/break with 409s when
the lease's state does not allow the operation, and the 412s a write gets from a lease it does
not hold (Blob error codes: learn.microsoft.com/rest/api/storageservices/blob-service-error-codes)."""

from __future__ import annotations

import pytest

from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.leases import Leases

KEY = ("t", "f.csv")
A, B = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def code(call) -> str:
    with pytest.raises(ServeError) as info:
        call()
    return info.value.code_for(True).code


def act(leases, action, lease_id=None, proposed=None, duration=None, period=None):
    return leases.act(KEY, action, lease_id, proposed, duration, period)


def test_acquire_renew_change_release():
    leases = Leases(Clock())
    assert act(leases, "acquire", proposed=A, duration="-1") == (201, {"x-ms-lease-id": A})
    assert leases.headers(KEY)["x-ms-lease-state"] == "leased"
    assert code(lambda: act(leases, "acquire", proposed=B, duration="-1")) == "LeaseAlreadyPresent"
    assert act(leases, "acquire", proposed=A, duration="-1")[0] == 201  # the same ID: fine
    assert code(lambda: act(leases, "renew", B)) == "LeaseIdMismatchWithLeaseOperation"
    assert act(leases, "renew", A)[0] == 200
    assert act(leases, "change", A, proposed=B) == (200, {"x-ms-lease-id": B})
    assert code(lambda: act(leases, "release", A)) == "LeaseIdMismatchWithLeaseOperation"
    assert act(leases, "release", B)[0] == 200
    assert code(lambda: act(leases, "release", B)) == "LeaseNotPresentWithLeaseOperation"
    assert code(lambda: act(leases, "acquire", duration="14")) == "InvalidHeaderValue"


def test_writes_need_the_lease_they_are_under():
    leases = Leases(Clock())
    leases.check_write(KEY, None)  # no lease: any write
    assert code(lambda: leases.check_write(KEY, A)) == "LeaseNotPresentWithBlobOperation"
    act(leases, "acquire", proposed=A, duration="-1")
    assert code(lambda: leases.check_write(KEY, None)) == "LeaseIdMissing"
    assert code(lambda: leases.check_write(KEY, B)) == "LeaseIdMismatchWithBlobOperation"
    leases.check_write(KEY, A)
    leases.drop(("t",))  # the folder was deleted: its files' leases go with it
    leases.check_write(KEY, None)


def test_fixed_leases_expire_and_breaks_take_their_period():
    clock = Clock()
    leases = Leases(clock)
    act(leases, "acquire", proposed=A, duration="15")
    clock.now += 16
    assert leases.headers(KEY)["x-ms-lease-state"] == "expired"
    leases.check_write(KEY, None)  # an expired lease guards nothing
    assert act(leases, "acquire", proposed=B, duration="-1")[0] == 201
    assert act(leases, "break", period="10") == (202, {"x-ms-lease-time": "10"})
    assert leases.headers(KEY)["x-ms-lease-state"] == "breaking"
    assert code(lambda: leases.check_write(KEY, None)) == "LeaseIdMissing"  # still guards
    assert code(lambda: act(leases, "acquire", proposed=A, duration="-1")) == \
        "LeaseIsBreakingAndCannotBeAcquired"
    clock.now += 10
    assert leases.headers(KEY)["x-ms-lease-state"] == "broken"
    assert code(lambda: act(leases, "renew", B)) == "LeaseIsBrokenAndCannotBeRenewed"
    leases.check_write(KEY, None)
    assert act(leases, "acquire", proposed=A, duration="-1")[0] == 201
    assert act(leases, "break", period="0")[1] == {"x-ms-lease-time": "0"}  # at once
    assert leases.headers(KEY)["x-ms-lease-state"] == "broken"
    assert code(lambda: Leases(Clock()).act(KEY, "break", None, None, None, None)) == \
        "LeaseNotPresentWithLeaseOperation"
