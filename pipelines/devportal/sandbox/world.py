"""The sandbox's data behind one lock: subscriptions, users, scripted edits and the clock.

`World` is the facade the server, the CLI and the tests use. It is built deterministically
from (seed, sizes, test share, clock start) and is safe to use from several threads: one
re-entrant lock guards all state, and a list page is read under one hold of it, so each page
is consistent by itself. The work is done by single-purpose modules, none of which locks:
- `generate`: the initial subscriptions from the seed, and service-id draws;
- `store`: the rows, their indexes and cached JSON, page reads and row edits;
- `transitions`: what the clock does (cancel, reactivate, add, renew, expire);
- `users`: accounts, profiles and settings.

Assumption (the spec does not say): `start`/`end` filter on each subscription's creation time,
which the response does not carry; both bounds are inclusive and a date-only `end` covers its
whole day.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from devportal.sandbox.clock import Rates, add_months, from_epoch, to_epoch
from devportal.sandbox.generate import ServicePicker, gc_paused, generate_subscriptions
from devportal.sandbox.store import DROP, STATUS, SubscriptionFilter, SubscriptionStore
from devportal.sandbox.transitions import Transitions
from devportal.sandbox.users import User, UserBook, generate_users, scripted_profiles


class World:
    """Subscriptions + users + simulated clock. See the module docstring."""

    DROP = DROP

    def __init__(
        self,
        *,
        subscriptions: int = 1000,
        users: int = 200,
        seed: int = 7,
        test_share: float = 0.05,
        start: datetime | str = "2026-11-01 00:00:00",
        rates: Rates | None = None,
    ) -> None:
        if subscriptions < 0 or users < 0:
            raise ValueError("subscriptions and users must be >= 0")
        if not 0.0 <= test_share <= 1.0:
            raise ValueError("test_share must be between 0 and 1")
        self.lock = threading.RLock()
        self.seed = seed
        # Scripted worlds (no generated subscriptions) only change when told to.
        rates = rates if rates is not None else (Rates() if subscriptions else Rates.static())
        self._store = SubscriptionStore(to_epoch(start))
        # Users first, then subscriptions, from one generator: the order is part of the seed.
        gen = random.Random(seed)
        with gc_paused():
            self.users: UserBook = generate_users(users, gen)
            self._picker = ServicePicker(self.users)
            base_new_per_day = generate_subscriptions(
                self._store,
                subscriptions,
                gen,
                self._picker,
                yearly_share=rates.yearly_share,
                test_share=test_share,
            )
        self._clock = Transitions(
            self._store,
            self._picker,
            seed=seed,
            rates=rates,
            test_share=test_share,
            base_new_per_day=base_new_per_day,
        )

    # ------------------------------------------------------------------ state

    @property
    def rates(self) -> Rates:
        return self._clock.rates

    @property
    def test_share(self) -> float:
        return self._clock.test_share

    @property
    def version(self) -> int:
        """Bumped on every change; lets readers notice drift."""
        return self._store.version

    @property
    def now(self) -> datetime:
        return from_epoch(self._store.now)

    @property
    def now_ts(self) -> int:
        return self._store.now

    # ------------------------------------------------------------------ subscription reads

    def subscription_bytes(self, sub_id: int) -> bytes | None:
        """The single Subscription object for `?id=` (live or test), None when unknown."""
        with self.lock:
            idx = self._store.find(sub_id)
            return None if idx is None else self._store.row_bytes(idx)

    def subscription_page(
        self, where: SubscriptionFilter, offset: int, limit: int
    ) -> tuple[list[bytes], int]:
        """One page of the filtered list (id ascending) and the filtered total, consistently."""
        with self.lock:
            return self._store.page(where, offset, limit)

    def truth(self, is_test: bool = False) -> list[dict[str, Any]]:
        """Every row of one class exactly as served, plus `is_test`; id ascending."""
        with self.lock:
            return self._store.truth(is_test)

    def get(self, sub_id: int) -> dict[str, Any] | None:
        """One row as served plus `is_test` and the hidden `created_at`; None when unknown."""
        with self.lock:
            return self._store.get(sub_id)

    def counts(self) -> dict[str, int]:
        """Row counts by class and state (O(rows); for the state endpoint and reports)."""
        with self.lock:
            return {
                **self._store.counts(),
                "users": len(self.users.users),
                "users_listed": len(self.users.listed),
                "max_id": self._store.last_id,
            }

    # ------------------------------------------------------------------ users

    def settings_page(
        self, *, usernames: list[str] | None, platform: str | None, offset: int, limit: int
    ) -> tuple[list[bytes], int]:
        with self.lock:
            rows = self.users.select(usernames, platform)
            return [u.entry_bytes() for u in rows[offset : offset + limit]], len(rows)

    def profile_bytes(self, user_id: int) -> bytes | None:
        with self.lock:
            user = self.users.users.get(user_id)
            return None if user is None else user.profile_bytes()

    def truth_users(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(u.entry_bytes()) for u in self.users.listed]

    def user_ids(self) -> list[int]:
        with self.lock:
            return self.users.ids()

    def profiles(self, user_id: int) -> dict[str, Any] | None:
        with self.lock:
            user = self.users.users.get(user_id)
            return None if user is None else json.loads(user.profile_bytes())

    def set_settings(self, user_id: int, settings: dict[str, Any] | None) -> None:
        """Store (or with None: delete) a user's settings record; unknown user -> KeyError."""
        with self.lock:
            user = self.users.users[user_id]
            user.settings = settings
            user.touch()
            self.users.reindex()
            self._store.version += 1

    def add_user(
        self,
        user_id: int,
        name: str,
        *,
        settings: dict[str, Any] | None = None,
        platforms: Sequence[str] = ("twitch",),
    ) -> None:
        """Add an account with the given twitch name (known-answer tests)."""
        with self.lock:
            if user_id in self.users.users:
                raise ValueError(f"user {user_id} exists")
            profiles = scripted_profiles(user_id, name, platforms)
            self.users.users[user_id] = User(user_id, profiles, settings)
            self.users.reindex()
            self._picker.refresh()
            self._store.version += 1

    def remove_user(self, user_id: int) -> None:
        """Delete an account: /users/{id} answers 404 and it leaves the settings list."""
        with self.lock:
            del self.users.users[user_id]
            self.users.deleted_ids.append(user_id)
            self.users.reindex()
            self._picker.refresh()
            self._store.version += 1

    # ------------------------------------------------------------------ scripted edits

    def add_subscription(
        self,
        service_id: int,
        status: str = "active",
        expires_at: datetime | str | None = None,
        created_at: datetime | str | None = None,
        is_test: bool = False,
        *,
        period_months: int = 1,
        id: int | None = None,
    ) -> int:
        """Add one subscription and return its id (max id + 1 unless `id` is given).

        `created_at` defaults to the clock's now, `expires_at` to created + one period.
        An explicit `id` must exceed every existing id: list order is id order.
        """
        if status not in STATUS:
            raise ValueError(f"status must be one of {STATUS}; use set_raw for other values")
        if period_months not in (1, 12):
            raise ValueError("period_months must be 1 or 12")
        with self.lock:
            store = self._store
            last = store.last_id
            sub_id = last + 1 if id is None else id
            if sub_id <= last or sub_id <= 0:
                raise ValueError(f"id must be a positive int above the current max id {last}")
            created = store.now if created_at is None else to_epoch(created_at)
            expires = (
                add_months(created, period_months) if expires_at is None else to_epoch(expires_at)
            )
            store.append(
                sub_id, service_id, created, expires, period_months, status == "canceled", is_test
            )
            store.version += 1
            return sub_id

    def sign_up(self, rng: random.Random) -> int:
        """A new live, active monthly subscription of a drawn user, created now, with the next
        id (at the end of the list); its id."""
        with self.lock:
            return self.add_subscription(self._picker.draw(rng))

    def cancel(self, sub_id: int) -> None:
        """active -> canceled; `expires_at` stays (usable until then)."""
        with self.lock:
            idx = self._store.need(sub_id)
            self._store.drop_raw(idx, "status")
            self._store.set_canceled(idx, True)

    def reactivate(self, sub_id: int) -> None:
        """canceled -> active; `expires_at` stays, the clock renews it when reached."""
        with self.lock:
            idx = self._store.need(sub_id)
            self._store.drop_raw(idx, "status")
            self._store.set_canceled(idx, False)

    def renew(self, sub_id: int, expires_at: datetime | str) -> None:
        """Set a new `expires_at` (status unchanged)."""
        with self.lock:
            store = self._store
            idx = store.need(sub_id)
            store.drop_raw(idx, "expires_at")
            store.set_expires(idx, to_epoch(expires_at))
            if store.expires[idx] > store.now:  # a past date is never queued: nothing to renew
                store.schedule(idx)

    def remove_subscription(self, sub_id: int) -> None:
        """The row disappears from every list and from `?id=` (hard delete upstream)."""
        with self.lock:
            self._store.remove(self._store.need(sub_id))

    def set_raw(self, sub_id: int, **fields: Any) -> None:
        """Serve these values verbatim (any JSON value, or `World.DROP` to omit a field).

        For bad-input tests: `expires_at="0000-00-00 00:00:00"`, `status="paused"`,
        `service_id="x"`, extra keys... Filters keep using the row's modelled values and the
        clock no longer touches the row.
        """
        with self.lock:
            self._store.set_raw(self._store.need(sub_id), fields)

    # ------------------------------------------------------------------ the clock

    def new_per_day(self) -> float:
        """Expected new subscriptions per simulated day (the rate, or the growth curve's)."""
        return self._clock.new_per_day()

    def advance(self, *, days: float = 0, hours: float = 0, seconds: float = 0) -> dict[str, int]:
        """Move the clock forward and apply what happened; returns counts of each change."""
        with self.lock:
            return self._clock.advance(days=days, hours=hours, seconds=seconds)
