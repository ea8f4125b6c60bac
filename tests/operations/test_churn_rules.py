"""The churn alert's rules (`alerts.churn.judge`) on months made up to the edge: which month is
judged, when a spike has no baseline, and why an estimated month is no baseline."""

from __future__ import annotations

from datetime import date

from devportal.operations.alerts.churn import Month, judge


def month(m: int, rate: float | None, estimate: bool = False) -> Month:
    return Month(date(2026, m, 1), int((rate or 0) * 100), 100, rate, estimate)


def test_the_latest_complete_month_is_judged_against_the_three_before() -> None:
    months = [month(5, 0.09), month(4, 0.03), month(3, 0.03), month(2, 0.03), month(1, 0.5)]
    finding = judge(months, rate_above=None, spike_factor=2.0)
    assert finding is not None and finding.month.month == date(2026, 5, 1)
    assert finding.trailing_mean == 0.03  # January's 50% is not among the three
    assert finding.reasons == [
        "3.0x the mean of the 3 months before (3.0%), above churn_spike_factor 2"
    ]
    assert judge(months, rate_above=None, spike_factor=3.0) is None  # 3x is not above 3x
    assert judge(months, rate_above=0.09, spike_factor=None) is None  # nor 9% above 9%


def test_a_spike_needs_three_measured_months_with_churn() -> None:
    fewer = [month(5, 0.09), month(4, 0.03), month(3, 0.03)]
    assert judge(fewer, rate_above=None, spike_factor=1.5) is None
    estimated = [month(5, 0.09), month(4, 0.03), month(3, 0.03), month(2, 0.03, estimate=True)]
    assert judge(estimated, rate_above=None, spike_factor=1.5) is None
    none_before = [month(5, 0.09), month(4, 0.0), month(3, 0.0), month(2, 0.0)]
    assert judge(none_before, rate_above=None, spike_factor=1.5) is None
    # the rate threshold still judges the month: only the spike needs the baseline
    finding = judge(estimated, 0.05, 1.5)
    assert finding is not None and finding.reasons == ["above churn_rate_above 5.0%"]


def test_an_estimated_latest_month_says_its_rate_is_a_lower_bound() -> None:
    finding = judge([month(5, 0.2, estimate=True)], rate_above=0.05, spike_factor=None)
    assert finding is not None
    assert finding.message() == (
        "churn in May 2026 was 20.0% (20 of 100 subscribers at the month's start) (a lower "
        "bound: the month began before the first sync): above churn_rate_above 5.0%"
    )


def test_no_month_or_no_base_is_no_finding() -> None:
    assert judge([], 0.01, 1.1) is None
    assert judge([month(5, None)], 0.01, 1.1) is None
