"""The data-test verdict keeps FAIL (rows broke the rule) apart from ERROR (could not run)."""

from mirrorspec.artifacts.data_test_results import DataTestResult, TestResults


def results(*statuses: str) -> TestResults:
    return TestResults([DataTestResult(f"t{i}", "s.t", "unique", "error", status)
                        for i, status in enumerate(statuses)])


def test_errors_are_not_called_failures():
    assert results("error", "error", "skipped").verdict() == \
        "2 data test(s) could not run (ERROR)"
    assert results("fail", "error", "pass").verdict() == \
        "1 data test(s) failed; 1 data test(s) could not run (ERROR)"
    assert results("pass", "warn", "skipped").verdict() == "all data tests passed"
    assert not results("skipped", "skipped").failed
