"""What a sweep may close (extract/reading/closing.py): what one `?id=N` answer says about a
subscription (`judge_answer`), and the mass-close guard (`check_mass_close`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from devportal.base.errors import IntegrityError
from devportal.extract.reading.closing import GONE, LISTED, UNCLEAR, check_mass_close, judge_answer
from devportal.extract.reading.list_read import ListRead
from devportal.extract.reading.subscription_list import SubscriptionsRead
from devportal.extract.reading.subscription_spool import Spool
from devportal.extract.transform.quality import DataQuality
from devportal.settings.config import DevportalConfig

ROW = {"id": 5, "service_id": 1005, "status": "active", "expires_at": "2025-03-01 12:00:00"}


@pytest.mark.parametrize(
    ("body", "is_test", "shared", "verdict"),
    [
        (ROW, False, False, LISTED),  # spec 4.1: the one Subscription object
        ({**ROW, "id": "5"}, False, False, LISTED),  # the id as a string is the same id
        ({**ROW, "id": 6}, False, False, UNCLEAR),  # another subscription
        ({k: v for k, v in ROW.items() if k != "id"}, False, False, UNCLEAR),
        ({"data": [ROW], "total": 1}, False, False, LISTED),  # a list filtered by id
        ({"data": [{**ROW, "id": 4}, ROW], "total": 2}, False, False, LISTED),
        ({"data": [{**ROW, "id": 4}], "total": 1}, False, False, UNCLEAR),  # `id` ignored
        ({"data": [ROW, ROW], "total": 2}, False, False, UNCLEAR),  # which of the two?
        ({"data": [], "total": 0}, False, False, UNCLEAR),  # an empty page is no 404
        ([ROW], False, False, UNCLEAR),
        (None, False, False, UNCLEAR),
        ("5", False, False, UNCLEAR),
        # an id both partitions hold: only an answer that says which one confirms it
        (ROW, False, True, UNCLEAR),
        ({**ROW, "is_test": False}, False, True, LISTED),
        ({**ROW, "is_test": True}, True, True, LISTED),
        ({**ROW, "is_test": True}, False, False, UNCLEAR),  # the test one, asked for live
        ({**ROW, "is_test": "true"}, True, False, LISTED),  # not a boolean: not read as one
    ],
)
def test_an_answer_to_id_n_confirms_subscription_n_only_when_it_is_sure(
    body: Any, is_test: bool, shared: bool, verdict: str
) -> None:
    said, row = judge_answer(5, body, is_test, shared)
    assert said == verdict
    if verdict == LISTED:
        assert row is not None and str(row["id"]) == "5"  # the row to load
    else:
        assert row is None


def test_a_verdict_is_never_gone_from_a_200_answer() -> None:
    """GONE comes from a 404 alone (closing._ask_each): an answer that lists nothing is not
    proof that the subscription is gone."""
    for body in (None, {}, {"data": []}, {"id": 6}):
        assert judge_answer(5, body, False, False)[0] != GONE


def config(**settings: Any) -> DevportalConfig:
    return DevportalConfig(base_url="http://127.0.0.1:1", access_token="t" * 20, **settings)


def spool(tmp_path: Path, ids: list[int], is_test: bool = False, verified: bool = True) -> Spool:
    """A read partition's spool (its file is never written: the guard reads ids only)."""
    report = ListRead("/subscriptions", {}, verified=verified)
    name = f"{'test' if is_test else 'live'}.arrow"
    return Spool(tmp_path / name, np.array(ids, dtype=np.int64), is_test, report, DataQuality())


def current(live: list[int], test: list[int] | None = None) -> Callable[[bool], np.ndarray]:
    """`current_ids(is_test)`: the open versions the destination holds."""
    return lambda is_test: np.array((test or []) if is_test else live, dtype=np.int64)


def test_a_sweep_that_would_close_more_than_the_share_is_refused(tmp_path: Path) -> None:
    read = SubscriptionsRead([spool(tmp_path, list(range(1, 8)))], set())
    with pytest.raises(IntegrityError) as err:
        check_mass_close(read, current(list(range(1, 11))), config())
    assert str(err.value) == (
        "this sweep would close 3 of 10 current subscriptions (30%, more than the 20% guard): "
        "nothing was loaded. If the API really dropped them, run again with --allow-mass-close"
    )


def test_a_sweep_within_the_share_passes(tmp_path: Path) -> None:
    read = SubscriptionsRead([spool(tmp_path, list(range(1, 9)))], set())
    check_mass_close(read, current(list(range(1, 11))), config())  # 2 of 10: 20%, not more
    with pytest.raises(IntegrityError, match="close 2 of 10 current subscriptions"):
        check_mass_close(read, current(list(range(1, 11))), config(mass_close_max_share=0.1))


def test_allow_mass_close_lets_any_sweep_close(tmp_path: Path) -> None:
    read = SubscriptionsRead([spool(tmp_path, [])], set())
    with pytest.raises(IntegrityError, match="close 10 of 10"):
        check_mass_close(read, current(list(range(1, 11))), config())
    check_mass_close(read, current(list(range(1, 11))), config(allow_mass_close=True))


def test_rows_confirmed_or_kept_are_not_closed(tmp_path: Path) -> None:
    """What the sweep leaves current (read, confirmed one by one, or kept unconfirmed) is not
    counted as closing."""
    live = spool(tmp_path, list(range(1, 8)))
    read = SubscriptionsRead([live], set())
    with pytest.raises(IntegrityError, match="close 3 of 10"):
        check_mass_close(read, current(list(range(1, 11))), config())
    live.kept = np.array([8, 9], dtype=np.int64)  # nothing confirmed them: they stay current
    check_mass_close(read, current(list(range(1, 11))), config())  # closes 10 alone


def test_a_read_that_closes_nothing_it_did_not_read_counts_nothing(tmp_path: Path) -> None:
    verified = SubscriptionsRead([spool(tmp_path, [1])], set())
    with pytest.raises(IntegrityError, match="close 9 of 10"):
        check_mass_close(verified, current(list(range(1, 11))), config())
    unverified = spool(tmp_path, [1], verified=False)  # closes_missing is False
    check_mass_close(SubscriptionsRead([unverified], set()), current(list(range(1, 11))), config())


def test_the_share_is_over_both_partitions(tmp_path: Path) -> None:
    """3 of 8 live rows closed is 37% of the live partition, but 3 of 20 current rows in all."""
    live = spool(tmp_path, list(range(1, 6)))
    test = spool(tmp_path, list(range(100, 112)), is_test=True)
    read = SubscriptionsRead([live, test], set())
    check_mass_close(read, current(list(range(1, 9)), list(range(100, 112))), config())
    fewer = spool(tmp_path, list(range(100, 106)), is_test=True)  # and 6 of 12 test rows
    with pytest.raises(IntegrityError, match="close 9 of 20 current subscriptions"):
        check_mass_close(
            SubscriptionsRead([live, fewer], set()),
            current(list(range(1, 9)), list(range(100, 112))),
            config(),
        )
