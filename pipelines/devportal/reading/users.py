"""Reading the user settings list (verified, in memory: it is small) and the accounts of the
users due, fetched concurrently (a 404 is recorded as `missing`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from devportal import extras, transform
from devportal.api import USER_ACCOUNTS_PATH, USER_SETTINGS_PATH
from devportal.client import ApiClient, NotFound, Page
from devportal.config import DevportalConfig
from devportal.progress import Progress
from devportal.reading.checks import ListRead, read_until_it_adds_up, verify_ids

log = logging.getLogger("devportal.reading")


# -- user settings ----------------------------------------------------------------------------


@dataclass
class SettingsRead:
    """The whole user settings list, verified: one row per user and one per settings leaf;
    `fields`: the paths its entries had, `columns`: where each landed."""

    users: list[dict[str, Any]]
    values: list[dict[str, Any]]
    dq: transform.DataQuality
    report: ListRead
    fields: extras.FieldStats = field(default_factory=extras.FieldStats)
    columns: extras.Columns = field(
        default_factory=lambda: transform.settings_columns(extras.Naming())
    )


def read_settings(
    client: ApiClient,
    cfg: DevportalConfig,
    observed_at: datetime,
    progress: Progress,
    first: Page | None = None,
    columns: extras.Columns | None = None,
) -> SettingsRead:
    """Read the settings list until it adds up (at most `sweep_attempts`); COLUMNS: where
    fields beyond the shown ones land (`transform.settings_columns`)."""
    report = ListRead(endpoint=USER_SETTINGS_PATH, params={})
    columns = columns if columns is not None else transform.settings_columns(extras.Naming())

    def read_once(pages: Iterator[Page]) -> SettingsRead:
        read = SettingsRead([], [], transform.DataQuality(), report, columns=columns)
        for page in pages:
            users, values = transform.user_settings_records(
                page.data, read.dq, observed_at, read.fields, columns
            )
            read.users.extend(users)
            read.values.extend(values)
            progress.page(
                "user settings", report.pages, page.last_page, len(read.users), report.attempts
            )
        verify_ids(
            np.array([u["user_id"] for u in read.users], dtype=np.int64),
            report,
            read.dq.count("user_settings", "user_id", transform.USER_ID_DROPPED),
        )
        return read

    return read_until_it_adds_up(
        "user settings", client, report, cfg.sweep_attempts, read_once, first
    )


# -- user accounts ----------------------------------------------------------------------------


@dataclass
class AccountsRead:
    """The accounts of the users due: one row each (404: status `missing`) and their profiles;
    `fields`: the top-level fields of the Profiles objects, `columns`: where each landed."""

    accounts: list[dict[str, Any]]
    profiles: list[dict[str, Any]]
    dq: transform.DataQuality
    fields: extras.FieldStats = field(default_factory=extras.FieldStats)
    columns: extras.Columns = field(
        default_factory=lambda: transform.account_columns(extras.Naming())
    )


def read_accounts(
    client: ApiClient,
    user_ids: Sequence[int],
    observed_at: datetime,
    columns: extras.Columns | None = None,
    progress: Progress | None = None,
) -> AccountsRead:
    """Fetch each user's account, up to the in-flight limit at a time; a 404 is recorded, not
    raised. PROGRESS hears of each account answered."""

    def fetch(user_id: int) -> Any:
        try:
            body, _ = client.get_json(USER_ACCOUNTS_PATH.format(user_id=user_id))
        except NotFound:
            return None
        return body

    read = AccountsRead([], [], transform.DataQuality())
    if columns is not None:
        read.columns = columns
    due = list(user_ids)
    progress = progress or Progress()
    for done, (user_id, body) in enumerate(client.map_concurrent(fetch, due), start=1):
        progress.items("user accounts", done, len(due))
        account, profiles = transform.account_records(
            user_id, body, observed_at, read.dq, read.fields, read.columns
        )
        read.accounts.append(account)
        read.profiles.extend(profiles)
    return read
