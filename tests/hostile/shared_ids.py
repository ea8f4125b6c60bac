"""A hostile API whose live and test subscription lists share ids, synced twice side by side:
once live only, once with `--include-test`. Every live figure must come out the same (issue 22
item 3). Used by tests/hostile/test_never_wrong.py, on DuckDB and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.hostile.server import SUBSCRIPTIONS, Answer, HostileApi, Request

# the server's clock for each run (the runs believe it: max_clock_skew_hours = 0)
CLOCKS = (
    "Sun, 01 Nov 2026 00:00:00 GMT",
    "Fri, 20 Nov 2026 00:00:00 GMT",
    "Sat, 05 Dec 2026 00:00:00 GMT",
)
SETTINGS = {"max_clock_skew_hours": 0, "accounts_ttl_days": 0, "mass_close_max_share": 0.5}

# every analytics model that describes live subscriptions, compared whole (as_of and the
# report's figures included); the runs' own ids differ, so as_of is compared without them
LIVE_MODELS = {
    "report_figures": "select * from analytics.report_figures",
    "as_of": "select as_of, first_sync_at, successful_syncs from analytics.as_of",
    "subscriptions_current": "select * from analytics.subscriptions_current where not is_test",
    "subscription_versions": "select * from analytics.subscription_versions where not is_test",
    "subscription_events": "select * from analytics.subscription_events",
    "monthly_churn": "select * from analytics.monthly_churn",
    "daily_subscribers": "select * from analytics.daily_subscribers",
    "expiring_soon": "select * from analytics.expiring_soon",
    "billing_periods": "select * from analytics.billing_periods",
    "monthly_renewals": "select * from analytics.monthly_renewals",
    "cohort_retention": "select * from analytics.cohort_retention",
    "subscription_lifetimes": "select * from analytics.subscription_lifetimes",
    "survival_curve": "select * from analytics.survival_curve",
    "reactivations": "select * from analytics.reactivations",
    "churn_by_platform": "select * from analytics.churn_by_platform",
    "users": "select * from analytics.users",
}


# versions that repeat the one before them: a run retired a subscription that had not changed
REPEATED_VERSIONS = """
    select count(*) from (
        select
            _row_version,
            lag(_row_version) over (partition by id, is_test order by _dlt_valid_from) as previous
        from devportal.subscriptions
    ) as versions
    where _row_version = previous
"""


def row(i: int, **changes: Any) -> dict[str, Any]:
    found = {
        "id": i,
        "service_id": 1000 + i,
        "status": "active",
        "expires_at": "2027-01-01 10:00:00",
    }
    found.update(changes)
    return found


def test_row(i: int, **changes: Any) -> dict[str, Any]:
    """A test subscription: same ids as live ones, other users, other states."""
    found = row(i, service_id=9000 + i, status="canceled", expires_at="2026-11-12 00:00:00")
    found.update(changes)
    return found


def setup(api: HostileApi) -> None:
    """Live 1..12, test 1..6 and 50, 51; a window (`start`) lists live 10 and up, every test
    row: a window's read holds test rows whose ids are live rows it did not read."""
    api.subscriptions = [
        row(i, expires_at="2026-11-15 10:00:00" if i % 3 == 0 else "2027-01-01 10:00:00")
        for i in range(1, 13)
    ]
    api.test_subscriptions = [test_row(i) for i in (*range(1, 7), 50, 51)]
    api.accounts = {
        **{1000 + i: {"primary": "twitch", "twitch": {"id": i}} for i in range(1, 8)},
        **{1000 + i: {"primary": "youtube", "youtube": {"id": f"UC{i}"}} for i in range(8, 14)},
        # test users' accounts: a live figure must not see them
        **{9000 + i: {"primary": "mixer", "mixer": {"id": i}} for i in range(1, 60)},
    }

    def answer(req: Request) -> Answer:
        if "start" in req.query and req.query.get("is_test", "") != "true":
            rows = [r for r in api.subscriptions if r["id"] >= 10]
            return Answer(200, api.page(req, rows))
        return api.subscriptions_answer(req)

    api.route(SUBSCRIPTIONS, answer)


def change(api: HostileApi, step: int) -> None:
    """What happens before run `step` (1, 2): cancellations, renewals, removals and new rows
    on both lists, several on ids the other list shares."""
    live = {r["id"]: r for r in api.subscriptions}
    test = {r["id"]: r for r in api.test_subscriptions or []}
    if step == 1:
        live[3]["status"] = "canceled"  # expires 11-15: churns
        live[4]["status"] = "canceled"  # expires 2027: usable
        live[6]["expires_at"] = "2026-12-15 10:00:00"  # renewed
        api.subscriptions.remove(live[12])  # removed (12 is not a test id)
        api.subscriptions.append(row(13))
        test[2]["status"] = "active"  # reactivated, test only
        test[2]["expires_at"] = "2027-03-01 00:00:00"
        api.test_subscriptions = [r for r in test.values() if r["id"] != 3]  # test 3 goes
        api.test_subscriptions.append(test_row(13))  # a test row with the new live id
        api.test_subscriptions.append(test_row(12))  # and one with the removed live id
    else:
        live[4]["status"] = "active"  # saved before expiry
        live[9]["expires_at"] = "2026-12-15 10:00:00"
        api.subscriptions.remove(live[5])
        api.test_subscriptions = [r for r in test.values() if r["id"] not in (1, 5)]


def scenario(api: HostileApi, run: Callable[[bool, list[str]], None]) -> None:
    """Three runs, each into both warehouses (`run(include_test, extra_args)`): a sweep, a
    window, a sweep, with changes on both lists before the second and the third."""
    setup(api)
    for step, clock in enumerate(CLOCKS):
        api.date = clock
        if step:
            change(api, step)
        extra = ["--window"] if step == 1 else []
        run(False, extra)
        run(True, ["--include-test", *extra])
