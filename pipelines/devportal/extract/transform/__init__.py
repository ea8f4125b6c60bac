"""Rows from API pages to typed records, and the data-quality ledger of what did not fit.

Values that do not fit their type are kept as NULL with the raw text beside them and counted;
they never stop a sync. Every read records the fields it saw (`extra_fields.FieldStats`), and fields
the spec does not show land in columns of their own.

One job per module, imports running one way (quality, versions <- subscriptions; quality <- users):

    quality        `DataQuality`: what did not fit, counted with samples; a value's raw text
    versions       `_row_version`, the content hash SCD2 compares; `rehash` of a spooled batch
    subscriptions  a batch of subscription rows as one typed Arrow table (the fast path)
    users          settings entries and account profiles as dict rows; child-row tombstones

Callers use the names below (`from devportal.extract import transform; transform.DataQuality()`).
"""

from devportal.extract.transform.quality import ID_DROPPED, USER_ID_DROPPED, DataQuality
from devportal.extract.transform.subscriptions import (
    SUBSCRIPTIONS_COLUMNS,
    status_counts,
    subscription_columns,
    subscriptions_table,
)
from devportal.extract.transform.users import (
    TOMBSTONE,
    USER_ACCOUNT_PROFILES_COLUMNS,
    USER_ACCOUNTS_COLUMNS,
    USER_SETTING_VALUES_COLUMNS,
    USER_SETTINGS_COLUMNS,
    USER_SETTINGS_UNLISTED_COLUMNS,
    account_columns,
    account_records,
    settings_columns,
    settings_version,
    tombstones,
    user_settings_records,
)
from devportal.extract.transform.versions import rehash

__all__ = [
    "ID_DROPPED",
    "SUBSCRIPTIONS_COLUMNS",
    "TOMBSTONE",
    "USER_ACCOUNTS_COLUMNS",
    "USER_ACCOUNT_PROFILES_COLUMNS",
    "USER_ID_DROPPED",
    "USER_SETTINGS_COLUMNS",
    "USER_SETTINGS_UNLISTED_COLUMNS",
    "USER_SETTING_VALUES_COLUMNS",
    "DataQuality",
    "account_columns",
    "account_records",
    "rehash",
    "settings_columns",
    "settings_version",
    "status_counts",
    "subscription_columns",
    "subscriptions_table",
    "tombstones",
    "user_settings_records",
]
