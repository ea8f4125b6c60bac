"""Maps keyed by ids are stored whole, as one JSON value (issue 33, part 2; extras/keyed.py).

PHP serialises an array whose keys are not 0..n-1 as a JSON object: `orders: {"18734": {...}}`.
Flattened, every order id became a column: DuckDB ran out of memory, PostgreSQL stopped at
1,600 columns, and the sync could never succeed again. A hostile API (tests/hostile/server.py)
sends such maps, keyed by numbers, UUIDs, hex ids and prefixed ids, at the top of a
subscription, nested in a plan object, in settings entries and in a platform's profile; and a
map of plain names that only grows past the bound across the rows of a run. On both engines:
the sync succeeds, each map is one `json` column holding what was sent, the sync line names
each map once (never a key), a map whose keys come in another order makes no new version, and a
warehouse the previous code flattened such a map into keeps loading and reading.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from devportal.extract import extra_fields
from devportal.extract.extra_fields import keyed
from tests.helpers import CliResult, OnEngine, subscription
from tests.hostile.conftest import token_env
from tests.hostile.server import HostileApi

Devportal = Callable[..., CliResult]
N = 450  # subscriptions, four orders each: 1,800 order ids, 3,600 columns flattened


def orders(i: int, reverse: bool = False) -> dict[str, Any]:
    ids = [str(18000 + 4 * i + k) for k in range(4)]
    if reverse:
        ids.reverse()
    return {oid: {"amount": 100 + i, "currency": "usd"} for oid in ids}


def prices(i: int) -> dict[str, Any]:
    return {str(uuid.UUID(int=i * 1000 + k)): {"amount": k} for k in range(3)}


def keyed_subscription(i: int, reverse: bool = False) -> dict[str, Any]:
    return subscription(
        i,
        orders=orders(i, reverse),
        plan={"name": "gold", "prices": prices(i)},  # a map nested in a record
        created_at="2024-05-01 10:00:00",
    )


def settings_entry(uid: int) -> dict[str, Any]:
    return {
        "user": {
            "service": {"id": uid, "username": f"user{uid}"},
            "youtube": {
                "channel_id": f"UC{uid}",
                "videos": {f"{uid:08x}{k:016x}": {"views": k} for k in range(3)},
            },
        },
        "settings": {"theme": "dark"},
        "purchases": {f"sku_{uid * 10 + k}": {"qty": k + 1} for k in range(3)},
    }


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _columns(engine: OnEngine, table: str) -> dict[str, str]:
    rows = engine.query(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'devportal' AND table_name = ?",
        table,
    )
    return {str(name): str(kind).lower() for name, kind in rows}


def _sync(api: HostileApi, devportal: Devportal, engine: OnEngine, **settings: Any) -> CliResult:
    args = ["sync", "--base-url", api.base_url, *engine.argv(), "--no-models"]
    result = devportal(*args, env={**token_env(api, **settings), **engine.env})
    assert result.code == 0, result.err
    return result


def _versions(engine: OnEngine) -> int:
    return int(engine.query("SELECT count(*) FROM devportal.subscriptions")[0][0])


def test_maps_keyed_by_ids_are_one_json_value_on_every_table(
    api: HostileApi, devportal: Devportal, engine: OnEngine
) -> None:
    api.per_page = 100
    api.subscriptions = [keyed_subscription(i) for i in range(1, N + 1)]
    api.settings = [settings_entry(uid) for uid in range(1, 7)]
    first = _sync(api, devportal, engine)

    subs = _columns(engine, "subscriptions")
    assert "orders" in subs and "plan__prices" in subs and "plan__name" in subs, sorted(subs)
    assert not [c for c in subs if any(ch.isdigit() for ch in c)], sorted(subs)
    assert len(subs) < 30, sorted(subs)
    assert "json" in subs["orders"] and "json" in subs["plan__prices"], subs
    for i, sent, plan_prices in engine.query(
        "SELECT id, orders, plan__prices FROM devportal.subscriptions WHERE id IN (1, ?)", N
    ):
        assert _json(sent) == orders(i) and _json(plan_prices) == prices(i)

    settings = _columns(engine, "user_settings")
    assert "purchases" in settings and "user__youtube__videos" in settings, sorted(settings)
    assert "user__youtube__channel_id" in settings  # a record's fields stay columns
    assert not [c for c in settings if c.startswith(("purchases__", "user__youtube__videos__"))]
    ((purchases, videos),) = engine.query(
        "SELECT purchases, user__youtube__videos FROM devportal.user_settings WHERE user_id = 2"
    )
    assert _json(purchases) == settings_entry(2)["purchases"]
    assert _json(videos) == settings_entry(2)["user"]["youtube"]["videos"]

    # the sync line names each map once, never one of its keys
    line = first.out
    for field in ("orders", "plan.prices", "purchases", "user.youtube.videos"):
        assert line.count(f"{field} kept whole as JSON") == 1, line
    assert "18004" not in line and "sku_" not in line, line
    last = "SELECT fields FROM devportal.sync_runs ORDER BY observed_at DESC LIMIT 1"
    fields = _json(engine.query(last)[0][0])
    assert fields["subscriptions"]["orders"]["whole"] == extra_fields.keyed.KEYED
    assert not [p for p in fields["subscriptions"] if p.startswith("orders.")]

    # the same maps, keys in another order: no new version; one amount changed: one version
    before = _versions(engine)
    api.subscriptions = [keyed_subscription(i, reverse=True) for i in range(1, N + 1)]
    again = _sync(api, devportal, engine)
    assert _versions(engine) == before, again.out
    assert "kept whole" not in again.out, again.out  # named once: when it became whole
    changed = keyed_subscription(5, reverse=True)
    changed["orders"]["18020"]["amount"] = 1
    api.subscriptions[4] = changed
    _sync(api, devportal, engine)
    assert _versions(engine) == before + 1


def test_a_map_of_names_that_grows_past_the_bound_is_kept_whole(
    api: HostileApi, devportal: Devportal, engine: OnEngine
) -> None:
    """Keys no id rule knows (`apple`, `birch`, ...): each row has five, the run has 300
    distinct; a row read before the bound was passed is folded back into the one value."""
    words = ("alpha", "beta", "gamma", "delta", "omega", "sigma")
    names = [f"{w}{c}" for w in words for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"]
    api.per_page = 20
    api.subscriptions = [
        subscription(i, features={names[(5 * i + k) % len(names)]: True for k in range(5)})
        for i in range(1, 121)
    ]
    _sync(api, devportal, engine)
    subs = _columns(engine, "subscriptions")
    assert "features" in subs and not [c for c in subs if c.startswith("features__")], subs
    for i, value in engine.query("SELECT id, features FROM devportal.subscriptions"):
        assert _json(value) == api.subscriptions[i - 1]["features"]
    fields = _json(engine.query("SELECT fields FROM devportal.sync_runs")[0][0])
    assert fields["subscriptions"]["features"]["whole"].endswith(" keys")


def test_a_warehouse_that_flattened_a_map_keeps_loading_and_reading(
    api: HostileApi, devportal: Devportal, engine: OnEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previous code flattened `orders` (`orders___18004__amount`, ...): that warehouse
    syncs on; its columns keep what they held, new values go to the one `orders` column, and
    a subscription whose orders did not change gets no new version (its hash is the same)."""
    api.subscriptions = [keyed_subscription(i) for i in range(1, 4)]
    with monkeypatch.context() as old:  # the previous code: no object kept whole
        old.setattr(extra_fields.fields, "whole_reason", lambda keys, bound=0: None)
        old.setattr(extra_fields.keyed, "whole_reason", lambda keys, bound=0: None)
        _sync(api, devportal, engine)
    assert "orders___18004__amount" in _columns(engine, "subscriptions")
    before = _versions(engine)

    api.subscriptions = [keyed_subscription(i, reverse=True) for i in range(1, 4)]
    result = _sync(api, devportal, engine)
    assert _versions(engine) == before, result.out
    assert "orders kept whole as JSON (orders): keyed by ids" in result.out, result.out
    assert "gone orders." not in result.out, result.out
    api.subscriptions.append(keyed_subscription(4))
    _sync(api, devportal, engine)
    ((old_amount,),) = engine.query(
        "SELECT orders___18004__amount FROM devportal.subscriptions WHERE id = 1"
    )
    assert old_amount == 101  # what the flattened column held stays readable
    ((sent,),) = engine.query("SELECT orders FROM devportal.subscriptions WHERE id = 4")
    assert _json(sent) == orders(4)


@pytest.mark.parametrize(
    ("keys", "reason"),
    [
        (["18734", "18801"], extra_fields.keyed.KEYED),
        (["total", "18734"], extra_fields.keyed.KEYED),  # PHP: a map with one named key
        (["550e8400-e29b-41d4-a716-446655440000"], extra_fields.keyed.KEYED),
        (["{550E8400E29B41D4A716446655440000}"], extra_fields.keyed.KEYED),
        (["5f2b9c1e8d0a4b3c2a1f0e9d"], extra_fields.keyed.KEYED),  # an ObjectId
        (["01ARZ3NDEKTSV4RRFFQ69G5FAV"], extra_fields.keyed.KEYED),  # a ULID
        (["sub_18734", "cus_NffrFeUfNV2Hib", "user:42"], extra_fields.keyed.KEYED),
        (["2024-05-01", "2024-05-02"], extra_fields.keyed.KEYED),
        (["ann@example.com"], extra_fields.keyed.KEYED),
        (["name", "amount", "currency"], None),
        (["line_1", "line_2", "address2", "utm_source"], None),
        (["sub_18734", "name"], None),  # a prefixed id among names: a record
        ([f"k{n}" for n in range(keyed.KEYS_MAX + 1)], f"{keyed.KEYS_MAX + 1} keys"),
    ],
)
def test_which_objects_are_maps(keys: list[str], reason: str | None) -> None:
    assert keyed.whole_reason(keys) == reason


def test_a_batch_read_before_the_bound_was_passed_is_folded_back() -> None:
    """Two spooled batches of one run: the first saw five plain keys of `features` (spooled
    flattened), the second 200 more (spooled whole). The run's plan keeps `features` whole and
    the first batch's rows get their objects back, hashed as before (no new version)."""
    from devportal.extract import transform

    first = [subscription(1, features={f"name{c}": k for k, c in enumerate("abcde")})]
    second = [subscription(2, features={f"word{n:03d}x": n for n in range(200)})]
    stats = extra_fields.FieldStats()
    dq = transform.DataQuality()
    one, _ = transform.subscriptions_table(first, False, dq, stats)
    two, _ = transform.subscriptions_table(second, False, dq, stats)
    assert ("features", "namea") in stats.kinds and stats.whole == {("features",): "200 keys"}
    columns = transform.subscription_columns(extra_fields.Naming())
    plan = extra_fields.plan(stats, columns, {})
    assert [c.name for c in plan.columns] == ["features"] and plan.columns[0].data_type == "json"
    for batch, sent in ((one, first), (two, second)):
        expanded = plan.expand(batch)
        assert [json.loads(v) for v in expanded.column("features").to_pylist()] == [
            sent[0]["features"]
        ]
        assert expanded.column("_row_version") == batch.column("_row_version")
    flat, _ = transform.subscriptions_table(
        [subscription(1, features=dict(reversed(first[0]["features"].items())))],
        False,
        dq,
        extra_fields.FieldStats(),
    )
    assert flat.column("_row_version") == one.column("_row_version")
    record = stats.record(columns)
    assert set(record) == {"id", "service_id", "status", "expires_at", "features"}
    assert record["features"]["whole"] == "200 keys"
