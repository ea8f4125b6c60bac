"""Reading the user settings list (verified; only the users whose entry changed are kept,
spooled) and the accounts of the users due, fetched concurrently (a 404 is recorded as
`missing`), spooled."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from devportal.base.api import USER_ACCOUNTS_PATH, USER_SETTINGS_PATH
from devportal.base.progress import Progress
from devportal.extract import extra_fields, transform
from devportal.extract.reading.list_read import ListRead, read_until_it_adds_up, verify_ids
from devportal.extract.reading.moves import settings_user_id
from devportal.extract.reading.row_spool import RowSpool
from devportal.http import ApiClient, NotFound, Page
from devportal.settings.config import DevportalConfig

log = logging.getLogger("devportal.reading")


# -- user settings ----------------------------------------------------------------------------


@dataclass(frozen=True)
class HeldSettings:
    """What the destination holds of the settings list: the stored users (sorted), each one's
    `_row_version` (0: stored before versions were kept) and the users marked unlisted
    (sorted). Arrays: a sweep of 200,000 users holds them in a few MB."""

    user_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    versions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    unlisted: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def version_of(self, user_id: int) -> int | None:
        """The version held for USER_ID, None for a user not held."""
        at = int(np.searchsorted(self.user_ids, user_id))
        if at < self.user_ids.size and int(self.user_ids[at]) == user_id:
            return int(self.versions[at])
        return None


@dataclass
class SettingsRead:
    """The whole user settings list, verified, as far as it changes what is held: the rows of
    the users whose entry changed (`users`, with their `values` and a tombstone for each without
    any), spooled; the users a verified read no longer lists (`unlisted`) and those listed again
    (`relisted`); `listed`: users read. `fields`: the paths its entries had, `columns`: where
    each landed."""

    users: RowSpool
    values: RowSpool
    dq: transform.DataQuality
    report: ListRead
    listed_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    values_read: int = 0  # settings leaves of every user read, changed or not
    unlisted: list[dict[str, Any]] = field(default_factory=list)
    fields: extra_fields.FieldStats = field(default_factory=extra_fields.FieldStats)
    columns: extra_fields.Columns = field(
        default_factory=lambda: transform.settings_columns(extra_fields.Naming())
    )

    @property
    def listed(self) -> int:
        return int(self.listed_ids.size)

    @property
    def changed(self) -> int:
        return self.users.rows

    def discard(self) -> None:
        self.users.discard()
        self.values.discard()


def read_settings(
    client: ApiClient,
    cfg: DevportalConfig,
    observed_at: datetime,
    progress: Progress,
    first: Page | None = None,
    columns: extra_fields.Columns | None = None,
    held: HeldSettings | None = None,
    spool_dir: Path | None = None,
) -> SettingsRead:
    """Read the settings list until it adds up (at most `sweep_attempts`); COLUMNS: where
    fields beyond the shown ones land (`transform.settings_columns`). Only what differs from
    HELD is kept (spooled under SPOOL_DIR page by page): memory stays a page whatever the size
    of the list, and an unchanged user adds no rows."""
    report = ListRead(endpoint=USER_SETTINGS_PATH, params={})
    columns = columns if columns is not None else transform.settings_columns(extra_fields.Naming())
    held = held if held is not None else HeldSettings()

    def read_once(pages: Iterator[Page]) -> SettingsRead:
        read = SettingsRead(
            RowSpool(spool_dir, "user_settings"),
            RowSpool(spool_dir, "user_setting_values"),
            transform.DataQuality(),
            report,
            columns=columns,
        )
        ids: list[int] = []
        try:
            for page in pages:
                users, values = transform.user_settings_records(
                    page.data, read.dq, observed_at, read.fields, columns
                )
                _keep_changed(users, values, held, read)
                read.values_read += len(values)
                ids.extend(user["user_id"] for user in users)
                progress.page(
                    "user settings", report.pages, page.last_page, len(ids), report.attempts
                )
            listed = np.array(ids, dtype=np.int64)
            verify_ids(
                listed, report, read.dq.count("user_settings", "user_id", transform.USER_ID_DROPPED)
            )
        except BaseException:
            read.discard()
            raise
        read.listed_ids = listed
        report.changed = read.changed
        if report.verified:
            read.unlisted = _listing_changes(listed, held, observed_at)
        return read

    return read_until_it_adds_up(
        "user settings",
        client,
        report,
        cfg.sweep_attempts,
        read_once,
        first,
        row_id=settings_user_id,
        noun="user",
    )


def _keep_changed(
    users: list[dict[str, Any]],
    values: list[dict[str, Any]],
    held: HeldSettings,
    read: SettingsRead,
) -> None:
    """Spool the users of one page whose version differs from the one held, with their values
    (a user with none gets a tombstone, which deletes the values held)."""
    by_user: dict[int, list[dict[str, Any]]] = {}
    for value in values:
        by_user.setdefault(value["user_id"], []).append(value)
    changed: list[dict[str, Any]] = []
    changed_values: list[dict[str, Any]] = []
    for user in users:
        own = by_user.get(user["user_id"], [])
        user["_row_version"] = transform.settings_version(user, own)
        if held.version_of(user["user_id"]) != user["_row_version"]:
            changed.append(user)
            changed_values.extend(own)
    tombstones = transform.tombstones(
        (u["user_id"] for u in changed), changed_values, transform.USER_SETTING_VALUES_COLUMNS
    )
    read.users.extend(changed)
    read.values.extend(changed_values + tombstones)


def _listing_changes(
    listed: np.ndarray, held: HeldSettings, observed_at: datetime
) -> list[dict[str, Any]]:
    """`user_settings_unlisted` rows: a user held and listed before but not by this verified
    read is marked unlisted now; a user marked unlisted but listed again gets a tombstone."""
    gone = np.setdiff1d(np.setdiff1d(held.user_ids, listed), held.unlisted)
    back = np.intersect1d(held.unlisted, listed)
    rows: list[dict[str, Any]] = [
        {"user_id": int(u), "unlisted_at": observed_at} for u in gone.tolist()
    ]
    rows.extend({"user_id": int(u), transform.TOMBSTONE: True} for u in back.tolist())
    return rows


# -- user accounts ----------------------------------------------------------------------------


@dataclass
class AccountsRead:
    """The accounts of the users due, spooled: one row each (404: status `missing`) and their
    profiles (a tombstone for each account with none); `fields`: the top-level fields of the
    Profiles objects, `columns`: where each landed."""

    accounts: RowSpool
    profiles: RowSpool
    dq: transform.DataQuality
    profiles_read: int = 0
    fields: extra_fields.FieldStats = field(default_factory=extra_fields.FieldStats)
    columns: extra_fields.Columns = field(
        default_factory=lambda: transform.account_columns(extra_fields.Naming())
    )

    def discard(self) -> None:
        self.accounts.discard()
        self.profiles.discard()


def read_accounts(
    client: ApiClient,
    user_ids: Sequence[int],
    observed_at: datetime,
    columns: extra_fields.Columns | None = None,
    progress: Progress | None = None,
    spool_dir: Path | None = None,
) -> AccountsRead:
    """Fetch each user's account, up to the in-flight limit at a time; a 404 is recorded, not
    raised. Rows are spooled under SPOOL_DIR as they come. PROGRESS hears of each account
    answered."""

    def fetch(user_id: int) -> Any:
        try:
            body, _ = client.get_json(USER_ACCOUNTS_PATH.format(user_id=user_id))
        except NotFound:
            return None
        return body

    read = AccountsRead(
        RowSpool(spool_dir, "user_accounts"),
        RowSpool(spool_dir, "user_account_profiles"),
        transform.DataQuality(),
    )
    if columns is not None:
        read.columns = columns
    due = list(user_ids)
    progress = progress or Progress()
    try:
        for done, (user_id, body) in enumerate(client.map_concurrent(fetch, due), start=1):
            progress.items("user accounts", done, len(due))
            account, profiles = transform.account_records(
                user_id, body, observed_at, read.dq, read.fields, read.columns
            )
            read.accounts.extend((account,))
            read.profiles_read += len(profiles)
            read.profiles.extend(
                profiles
                or transform.tombstones((user_id,), (), transform.USER_ACCOUNT_PROFILES_COLUMNS)
            )
    except BaseException:
        read.discard()
        raise
    return read
