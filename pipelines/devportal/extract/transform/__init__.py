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

from devportal.extract.transform.quality import (
    ID_DROPPED,
    SAMPLE_SIZE,
    USER_ID_DROPPED,
    DataQuality,
    Problem,
    json_text,
    raw_text,
)
from devportal.extract.transform.subscriptions import (
    KNOWN_STATUSES,
    SUBSCRIPTION_FIELDS,
    SUBSCRIPTIONS_COLUMNS,
    SUBSCRIPTIONS_SCHEMA,
    parse_timestamp,
    see_spec,
    status_counts,
    subscription_columns,
    subscriptions_table,
)
from devportal.extract.transform.users import (
    PROFILE_ID_KEYS,
    PROFILE_NAME_KEYS,
    TOMBSTONE,
    TOMBSTONE_COLUMN,
    TWITCH_FIELDS,
    USER_ACCOUNT_PROFILES_COLUMNS,
    USER_ACCOUNTS_COLUMNS,
    USER_SETTING_VALUES_COLUMNS,
    USER_SETTINGS_COLUMNS,
    USER_SETTINGS_UNLISTED_COLUMNS,
    account_columns,
    account_records,
    flatten_settings,
    pointer_token,
    settings_columns,
    settings_version,
    tombstones,
    user_settings_records,
)
from devportal.extract.transform.versions import rehash

__all__ = [
    "ID_DROPPED",
    "KNOWN_STATUSES",
    "PROFILE_ID_KEYS",
    "PROFILE_NAME_KEYS",
    "SAMPLE_SIZE",
    "SUBSCRIPTIONS_COLUMNS",
    "SUBSCRIPTIONS_SCHEMA",
    "SUBSCRIPTION_FIELDS",
    "TOMBSTONE",
    "TOMBSTONE_COLUMN",
    "TWITCH_FIELDS",
    "USER_ACCOUNTS_COLUMNS",
    "USER_ACCOUNT_PROFILES_COLUMNS",
    "USER_ID_DROPPED",
    "USER_SETTINGS_COLUMNS",
    "USER_SETTINGS_UNLISTED_COLUMNS",
    "USER_SETTING_VALUES_COLUMNS",
    "DataQuality",
    "Problem",
    "account_columns",
    "account_records",
    "flatten_settings",
    "json_text",
    "parse_timestamp",
    "pointer_token",
    "raw_text",
    "rehash",
    "see_spec",
    "settings_columns",
    "settings_version",
    "status_counts",
    "subscription_columns",
    "subscriptions_table",
    "tombstones",
    "user_settings_records",
]
