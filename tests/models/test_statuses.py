"""Every status accounted for (issue 21): statuses the spec does not show (`trialing`,
`past_due`) are kept as sent, counted on their own line of the report so that usable = active +
canceled + other, and `[analytics] status_map` says how churn, renewal and cancellation figures
treat them; unmapped, such a status is "other": usable until `expires_at`, never a cancellation.

Through the real CLI (`devportal sync`, `models --check`, `report`, in this process, and once
as a subprocess reading `.dlt/config.toml`) against the hostile server, whose `Date` header is
the runs' clock. Two syncs, June 1 and June 15 2026 (as_of):

    id  June 1                 June 15                 usable at as_of
     1  active   2026-07-01    active   2026-07-01     yes
     2  active   2026-06-10    past_due 2026-06-10     no (expired June 10)
     3  active   2026-07-05    past_due 2026-07-05     yes
     4  trialing 2026-06-20    trialing 2026-06-20     yes (within 7 days)
     5  trialing 2026-06-25    active   2026-07-25     yes (not within 30 days)
     6  past_due 2026-06-05    past_due 2026-06-05     no (expired June 5)
     7  canceled 2026-06-30    canceled 2026-06-30     yes
     8  past_due 2026-07-10    past_due 2026-07-10     yes
     9  -                      trialing 2026-06-29     yes (new)
    10  canceled 2026-06-30    trialing 2026-07-14     yes

Usable 8 = active 2 (1, 5) + canceled 1 (7) + other 5: trialing 3 (4, 9, 10), past_due 2
(3, 8; of 4 read). Expiring within 30 days (to July 15): 1, 3, 4, 7, 8, 9, 10.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
from datetime import UTC, date, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CliResult, query, run_devportal
from tests.hostile.server import HostileApi

Cli = Any  # the `devportal` fixture: devportal(*argv, env=...) -> CliResult

JUNE_1 = datetime(2026, 6, 1, tzinfo=UTC)
JUNE_15 = datetime(2026, 6, 15, tzinfo=UTC)
UNMAPPED = "not a cancellation; set [analytics] status_map"
MAP_PAST_DUE = {"ANALYTICS__STATUS_MAP": json.dumps({"past_due": "canceled"})}
MAP_BOTH = {"ANALYTICS__STATUS_MAP": json.dumps({"trialing": "active", "past_due": "canceled"})}
# the events with past_due mapped to canceled: 2 and 3 went from active to past_due (canceled
# June 15), 2 (June 10) and 6 (June 5) expired as canceled; 5 renewed
PAST_DUE_EVENTS = [
    (2, "canceled", date(2026, 6, 15)),
    (2, "expired", date(2026, 6, 10)),
    (3, "canceled", date(2026, 6, 15)),
    (5, "renewed", date(2026, 6, 15)),
    (6, "expired", date(2026, 6, 5)),
]


def row(i: int, status: str, expires: str) -> dict[str, Any]:
    return {"id": i, "service_id": 1000 + i, "status": status, "expires_at": f"{expires} 00:00:00"}


# the module docstring's table: id: (status, expires) on June 1 (None: not listed), on June 15
STORY: dict[int, tuple[tuple[str, str] | None, tuple[str, str]]] = {
    1: (("active", "2026-07-01"), ("active", "2026-07-01")),
    2: (("active", "2026-06-10"), ("past_due", "2026-06-10")),
    3: (("active", "2026-07-05"), ("past_due", "2026-07-05")),
    4: (("trialing", "2026-06-20"), ("trialing", "2026-06-20")),
    5: (("trialing", "2026-06-25"), ("active", "2026-07-25")),
    6: (("past_due", "2026-06-05"), ("past_due", "2026-06-05")),
    7: (("canceled", "2026-06-30"), ("canceled", "2026-06-30")),
    8: (("past_due", "2026-07-10"), ("past_due", "2026-07-10")),
    9: (None, ("trialing", "2026-06-29")),
    10: (("canceled", "2026-06-30"), ("trialing", "2026-07-14")),
}
FIRST = [row(i, *june_1) for i, (june_1, _) in STORY.items() if june_1 is not None]
SECOND = [row(i, *june_15) for i, (_, june_15) in STORY.items()]


def env(api: HostileApi, **more: str) -> dict[str, str]:
    # the server's Date is the runs' clock, however far from this machine's
    return {
        "SOURCES__DEVPORTAL__ACCESS_TOKEN": api.token,
        "SOURCES__DEVPORTAL__MAX_CLOCK_SKEW_HOURS": "0",
        **more,
    }


def ok(result: CliResult) -> str:
    assert result.code == 0, result.err
    return result.out


def synced(api: HostileApi, devportal: Cli, where: list[str]) -> None:
    """The two syncs of the module docstring, into WHERE (`--warehouse ...`, a destination)."""
    sync = ["sync", "--base-url", api.base_url, "--no-models", *where]
    for rows, when in ((FIRST, JUNE_1), (SECOND, JUNE_15)):
        api.subscriptions = [dict(r) for r in rows]
        api.date = format_datetime(when, usegmt=True)
        ok(devportal(*sync, env=env(api)))


@pytest.fixture
def history(api: HostileApi, devportal: Cli, tmp_path: Path) -> Path:
    target = tmp_path / "wh" / "warehouse.duckdb"
    synced(api, devportal, ["--warehouse", str(target)])
    return target


def models(devportal: Cli, where: list[str], **extra: str) -> str:
    """`devportal models --check`: every data test passes, whatever the statuses."""
    out = ok(devportal("models", *where, "--check", env=extra))
    assert "data tests passed" in out
    return out


def mapped(monkeypatch: pytest.MonkeyPatch, setting: dict[str, str]) -> None:
    """SETTING (`[analytics] status_map`) set for the rest of the test, as a user's
    `.dlt/config.toml` stays set: `report` applies the settings set now (it rebuilds the
    models when they differ from those of the last build: `models.applied`)."""
    for key, value in setting.items():
        monkeypatch.setenv(key, value)


def figures(devportal: Cli, where: list[str]) -> dict[str, Any]:
    return json.loads(ok(devportal("report", *where, "--format", "json")))


def assert_adds_up(got: dict[str, Any]) -> None:
    assert got["usable_subscribers"] == (
        got["usable_active"] + got["usable_canceled"] + got["usable_other"]
    )
    assert got["usable_other"] == sum(s["usable"] for s in got["other_statuses"])
    for days in ("7d", "30d"):
        parts = (f"expiring_{days}_renewing", f"expiring_{days}_churning", f"expiring_{days}_other")
        assert got[f"expiring_{days}"] == sum(got[key] for key in parts)


def events(warehouse: Path) -> list[tuple[Any, ...]]:
    return query(
        warehouse,
        "select subscription_id, event_type, event_at::date from analytics.subscription_events "
        "where event_type <> 'new' order by 1, 2",
    )


def test_unmapped_statuses_are_other_and_the_usable_line_adds_up(
    history: Path, devportal: Cli
) -> None:
    wh = ["--warehouse", str(history)]
    models(devportal, wh)
    got = figures(devportal, wh)
    assert {k: got[k] for k in ("usable_subscribers", "usable_active", "usable_canceled")} == {
        "usable_subscribers": 8,
        "usable_active": 2,
        "usable_canceled": 1,
    }
    assert got["usable_other"] == 5
    assert got["other_statuses"] == [
        {"status": "trialing", "treated_as": "other", "usable": 3, "subscriptions": 3},
        {"status": "past_due", "treated_as": "other", "usable": 2, "subscriptions": 4},
    ]
    # nothing unmapped is a cancellation or churn; nor renews; an unmapped status is neither
    assert (got["canceled_30d"], got["churned_30d"]) == (0, 0)
    assert (got["expiring_30d"], got["expiring_30d_renewing"]) == (7, 1)
    assert (got["expiring_30d_churning"], got["expiring_30d_other"]) == (1, 5)
    assert (got["expiring_7d"], got["expiring_7d_other"]) == (1, 1)
    assert_adds_up(got)
    # the new keys sit after the ones they split, the old ones keep their names and places
    keys = list(got)
    assert keys.index("usable_canceled") + 1 == keys.index("usable_other")
    assert keys.index("usable_other") + 1 == keys.index("other_statuses")

    # kept as sent and treated as other: past_due after active is no cancellation
    assert query(
        history,
        "select id, status_sent, status, is_usable, canceled_at from analytics.subscriptions_current "
        "where id in (2, 3, 4, 10) order by id",
    ) == [
        (2, "past_due", "other", False, None),
        (3, "past_due", "other", True, None),
        (4, "trialing", "other", True, None),
        (10, "trialing", "other", True, None),
    ]
    # 5's expiry moved on while active: a renewal; nothing else happened as far as churn goes
    assert events(history) == [(5, "renewed", date(2026, 6, 15))]
    assert query(
        history,
        "select usable, active, canceled_usable, other_usable from analytics.daily_subscribers "
        "order by day desc limit 1",
    ) == [(8, 2, 1, 5)]
    assert query(history, "select status, treated_as from analytics.status_map order by 1") == [
        ("active", "active"),
        ("canceled", "canceled"),
    ]


def test_every_format_names_the_other_statuses(
    history: Path, devportal: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh = ["--warehouse", str(history)]
    mapped(monkeypatch, MAP_PAST_DUE)
    models(devportal, wh)
    line = f"trialing 3 ({UNMAPPED}), past_due 2 (treated as canceled)"

    table = ok(devportal("report", *wh)).splitlines()
    start = table.index("Usable subscribers")
    block = [re.split(r"\s{2,}", text.strip()) for text in table[start + 1 : start + 5]]
    assert block == [
        ["usable now", "8"],
        ["active", "2"],
        ["canceled, usable until expiry", "1"],
        ["other", "5"],
    ]
    assert table[start + 5] == "    " + line
    assert int(block[0][1]) == sum(int(value) for _, value in block[1:])
    assert [re.split(r"\s{2,}", t.strip()) for t in table if "status not mapped" in t] == [
        ["other (status not mapped)", "1"],
        ["other (status not mapped)", "3"],
    ]

    rows = list(csv.DictReader(io.StringIO(ok(devportal("report", *wh, "--format", "csv")))))
    cells = {r["metric"]: r["value"] for r in rows}
    assert (cells["usable_other"], cells["other_statuses"]) == ("5", line)

    markdown = ok(devportal("report", *wh, "--format", "markdown")).splitlines()
    assert "| other | 5 |" in markdown
    assert f"| other, by status | {line} |" in [m.replace("\\", "") for m in markdown]

    page = tmp_path / "report.html"
    ok(devportal("report", *wh, "--html", str(page)))
    text = html.unescape(page.read_text(encoding="utf-8"))
    assert '<td class="sub">other</td><td class="value">5</td>' in text
    assert f'<td class="sub">other, by status</td><td class="note">{line}</td>' in text


def test_status_map_makes_past_due_a_cancellation_and_churn(
    history: Path, devportal: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh = ["--warehouse", str(history)]
    mapped(monkeypatch, MAP_PAST_DUE)
    models(devportal, wh)
    got = figures(devportal, wh)
    # the usable line is by the status as sent: unchanged, past_due named with its treatment
    assert (got["usable_subscribers"], got["usable_active"], got["usable_canceled"]) == (8, 2, 1)
    assert got["other_statuses"] == [
        {"status": "trialing", "treated_as": "other", "usable": 3, "subscriptions": 3},
        {"status": "past_due", "treated_as": "canceled", "usable": 2, "subscriptions": 4},
    ]
    # 2 and 3 went from active to past_due: canceled June 15; 2 (June 10) and 6 (June 5) expired
    # as canceled: churn. 6 was past_due from the first sync: no cancellation seen
    assert (got["canceled_30d"], got["churned_30d"]) == (2, 2)
    assert (got["expiring_30d_renewing"], got["expiring_30d_churning"]) == (1, 3)
    assert got["expiring_30d_other"] == 3
    assert_adds_up(got)
    assert events(history) == PAST_DUE_EVENTS
    assert query(
        history,
        "select churned, cancellations from analytics.monthly_churn where month = ?",
        date(2026, 6, 1),
    ) == [(2, 2)]
    assert query(
        history,
        "select id, status_sent, status, canceled_at from analytics.subscriptions_current "
        "where id in (3, 8) order by id",
    ) == [
        (3, "past_due", "canceled", datetime(2026, 6, 15)),
        (8, "past_due", "canceled", datetime(2026, 6, 1)),
    ]

    # the map is read at every build: without it, the same history is as before
    monkeypatch.delenv("ANALYTICS__STATUS_MAP")
    models(devportal, wh)
    again = figures(devportal, wh)
    assert (again["canceled_30d"], again["churned_30d"]) == (0, 0)
    assert events(history) == [(5, "renewed", date(2026, 6, 15))]


def test_a_mapped_status_acts_as_its_treatment_in_every_event(
    history: Path, devportal: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh = ["--warehouse", str(history)]
    mapped(monkeypatch, MAP_BOTH)
    models(devportal, wh)
    got = figures(devportal, wh)
    assert [(s["status"], s["treated_as"]) for s in got["other_statuses"]] == [
        ("trialing", "active"),
        ("past_due", "canceled"),
    ]
    # nothing is left unmapped: trialing renews, past_due churns
    assert (got["expiring_30d_renewing"], got["expiring_30d_churning"]) == (4, 3)
    assert (got["expiring_30d_other"], got["expiring_7d_renewing"]) == (0, 1)
    assert_adds_up(got)
    # 10 went from canceled to trialing (= active): a reactivation, its expiry moved on: a
    # renewal; 5 from trialing to active is no event but its renewal (one treatment)
    assert events(history) == [
        *PAST_DUE_EVENTS,
        (10, "reactivated", date(2026, 6, 15)),
        (10, "renewed", date(2026, 6, 15)),
    ]
    assert query(
        history, "select month, reactivated, saved from analytics.reactivations order by 1"
    ) == [(date(2026, 6, 1), 1, 1)]
    table = ok(devportal("report", *wh)).splitlines()
    assert "    trialing 3 (treated as active), past_due 2 (treated as canceled)" in table


def test_status_map_in_config_toml_is_read_by_a_models_run(
    history: Path, tmp_path: Path, api: HostileApi
) -> None:
    """`[analytics] status_map` in `.dlt/config.toml` of the working directory: a real process
    (dlt reads the file where the command runs)."""
    project = tmp_path / "project"
    (project / ".dlt").mkdir(parents=True)
    (project / ".dlt" / "config.toml").write_text(
        '[analytics]\nstatus_map = { past_due = "canceled", trialing = "active" }\n',
        encoding="utf-8",
    )
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("ANALYTICS__")}
    run = run_devportal(
        "models", "--warehouse", str(history), "--check", cwd=project, env=unset, timeout=600
    )
    assert run.code == 0, run.err
    assert query(history, "select status, treated_as from analytics.status_map order by 1") == [
        ("active", "active"),
        ("canceled", "canceled"),
        ("past_due", "canceled"),
        ("trialing", "active"),
    ]
    assert query(
        history,
        "select status_sent, status, count(*) from analytics.subscriptions_current "
        "group by 1, 2 order by 1",
    ) == [
        ("active", "active", 2),
        ("canceled", "canceled", 1),
        ("past_due", "canceled", 4),
        ("trialing", "active", 3),
    ]


def test_a_bad_status_map_stops_the_build_in_one_line_and_leaves_it_as_it_was(
    history: Path, devportal: Cli
) -> None:
    wh = ["--warehouse", str(history)]
    models(devportal, wh, **MAP_PAST_DUE)
    result = devportal(
        "models", *wh, env={"ANALYTICS__STATUS_MAP": json.dumps({"past_due": "lapsed"})}
    )
    assert result.code == 2 and result.out == ""  # a configuration error
    assert result.err == (
        "devportal: error: configuration [analytics] status_map.past_due = 'lapsed' must be "
        "'active' or 'canceled': fix [analytics] status_map in .dlt/config.toml\n"
    )
    assert query(history, "select status from analytics.status_map order by 1") == [
        ("active",),
        ("canceled",),
        ("past_due",),
    ]


def test_the_same_on_postgres(
    api: HostileApi,
    devportal: Cli,
    postgres: str,
    history: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Synced into PostgreSQL too: the models pass --check there with the map, and the report
    reads the same figures, byte for byte, as from the DuckDB warehouse."""
    pg = ["--destination", "postgres", "--warehouse", str(tmp_path / "pg" / "warehouse.duckdb")]
    synced(api, devportal, pg)
    mapped(monkeypatch, MAP_PAST_DUE)
    models(devportal, pg)
    models(devportal, ["--warehouse", str(history)])
    on_pg = ok(devportal("report", *pg, "--format", "json"))
    assert on_pg == ok(devportal("report", "--warehouse", str(history), "--format", "json"))
    got = json.loads(on_pg)
    assert (got["usable_other"], got["canceled_30d"], got["churned_30d"]) == (5, 2, 2)
    assert got["other_statuses"][1] == {
        "status": "past_due",
        "treated_as": "canceled",
        "usable": 2,
        "subscriptions": 4,
    }
    assert_adds_up(got)
    table = ok(devportal("report", *pg)).splitlines()
    assert f"    trialing 3 ({UNMAPPED}), past_due 2 (treated as canceled)" in table
