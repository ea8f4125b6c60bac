"""`devportal_source`: the Developer API as one dlt source, the unit of work of every sync.

    pipeline = dlt.pipeline(destination="duckdb", dataset_name="devportal")
    pipeline.run(devportal_source())  # settings from [sources.devportal] / SOURCES__DEVPORTAL__*

Tables written:

- `subscriptions`: SCD2 history keyed on (`id`, `is_test`): live and test subscriptions are two
  lists whose ids may overlap, and a run only ever retires versions of its own partition
  (`_dlt_valid_from`/`_dlt_valid_to`, NULL = current), versioned by `_row_version` (hash of
  service_id, status, expires_at, is_test and the extra fields not in history_ignore_fields).
- `user_settings` (merge on `user_id`) and `user_setting_values` (long form, replaced per user).
- `user_accounts` and `user_account_profiles` (merge on `user_id`; 404 -> status `missing`).
  A child table always equals what the latest read of its parent row implies: a user read with
  no children (settings `{}`, an account now 404) has theirs removed (`resources.per_user_tables`).
- `sync_runs` (one row per run) and `data_quality` (one row per problem kind per run).

Fields the spec does not show land in columns of their own in the table of their resource
(`extra_fields`, docs/extra-fields.md); each run records in `sync_runs` the fields it saw
(`fields`), the rows per subscription status (`statuses`) and what changed in the shape of the
data since earlier runs (`schema_changes`). The API's tables take `schema_contract`;
devportal's own records always evolve.

Calling the source is cheap: it checks the settings and makes the resources, and reads nothing.
The read itself is `read.read_api` (every list read and verified before any resource hands over
a row; the subscriptions' write disposition and columns decided on what was read). `devportal
sync` reads first and passes what it read (`reads=`), so dlt's extract only takes rows and
never calls the read; a bare `pipeline.run(devportal_source())` reads once, when dlt extracts
the first resource. The resources hand over their part of the one read, the run's record
(`sync_runs`) included: they may be extracted in any order.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import dlt
from dlt.common.configuration.container import Container
from dlt.common.pipeline import PipelineContext
from dlt.common.typing import TSecretStrValue

from devportal.base.progress import Lines
from devportal.extract.read import (
    SOURCE_NAME,
    Asked,
    ReadInputs,
    Reads,
    api_contract,
    read_api,
    wanted_resources,
)
from devportal.extract.reading import (
    Progress,
)
from devportal.extract.resources import (
    ACCOUNTS_TABLES,
    SETTINGS_TABLES,
    PerUserHandover,
    Rows,
    SubscriptionsHandover,
    formats_for,
    per_user_tables,
    run_tables,
    subscriptions_resource,
    unlisted_table,
)
from devportal.extract.sync_record import SyncRecord
from devportal.http import (
    RESOURCES,
    ApiClient,
)
from devportal.settings.config import SECTION, DevportalConfig, require_endpoint

log = logging.getLogger("devportal.source")


@dlt.source(name=SOURCE_NAME, section=SECTION, max_table_nesting=0, spec=DevportalConfig)
def devportal_source(
    base_url: str = dlt.config.value,
    access_token: TSecretStrValue = dlt.secrets.value,
    resources: Sequence[str] = RESOURCES,
    since: datetime | None = None,
    window: bool = False,
    progress_every_s: float | None = None,
    config: DevportalConfig = None,  # type: ignore[assignment]
    client: ApiClient | None = None,
    reads: Reads | None = None,
    inputs: ReadInputs | None = None,
    progress: Progress | None = None,
) -> list[Any]:
    """Every resource of one run.

    `reads`: what a finished read holds (`read.read_api`; `devportal sync` reads first, then
    makes the source): the resources only hand it over. Without it (a user's own
    `pipeline.run(devportal_source())`), the run reads and verifies the API once, when dlt
    extracts the first resource.

    Settings arrive from `[sources.devportal]` (every field of `DevportalConfig`), or pass a
    resolved `config`. `base_url` and `access_token`, when given, override that section: dlt
    resolves them into `config` (the spec) before the body runs, and the body reads every
    setting, those two included, from `config`. `resources` picks what to read (default all);
    `since` or `window` read a `start`/`end` window instead of a full sweep (`window`: from the
    last run's clock minus `lookback_hours`). `progress`: what the read reports its pages and
    requests to (a `devportal.base.progress.Progress`); else `progress_every_s` prints a line
    while lists are paged. `client`: an `ApiClient` already reading (see `http.adopt`), used
    and closed instead of a new one. `inputs`: what the run needs of its pipeline and
    destination (`ReadInputs.of(pipeline)`); when not given, those of the pipeline this source
    is created for (dlt's active pipeline): its file formats now, what its destination holds
    when the run reads.

    The call itself makes no request and asks the destination nothing: it checks the settings
    (a bad one fails here) and makes the resources.
    """
    cfg = require_endpoint(config)
    wanted = wanted_resources(resources)
    pipeline = _active_pipeline() if inputs is None else None
    formats = inputs.formats if inputs is not None else formats_for(pipeline)
    if reads is not None:
        hand: Callable[[], Reads] = lambda: reads  # noqa: E731
    else:
        api = client or ApiClient(cfg)  # checks the HTTP settings; connects on the first request
        # the window cursor: the clock of the last run the destination holds (its
        # `sync_runs`), else the one in this pipeline's state; read here, where dlt gives the
        # source its state (local: no request, no query)
        has_state = inputs.has_state if inputs is not None else pipeline is not None
        cursor = dlt.current.source_state().get("window_cursor") if has_state else None

        def read() -> Reads:
            with api:
                return read_api(
                    api,
                    cfg,
                    inputs or ReadInputs.of(pipeline),
                    Asked(wanted, since, window, cursor),
                    progress or (Lines(progress_every_s) if progress_every_s else Progress()),
                )

        hand = _ReadOnce(read)
    given = _Handover(hand)
    contract = api_contract(cfg)
    data: list[Any] = []
    if "subscriptions" in wanted:
        data.append(subscriptions_resource(given.subscriptions, formats.arrow, contract))
    if "user_settings" in wanted:
        settings = given.per_user(SETTINGS_TABLES.name)
        data.extend(per_user_tables(SETTINGS_TABLES, settings, formats.rows, contract))
        data.append(unlisted_table(given.unlisted, formats.rows))
    if "user_accounts" in wanted:
        accounts = given.per_user(ACCOUNTS_TABLES.name)
        data.extend(per_user_tables(ACCOUNTS_TABLES, accounts, formats.rows, contract))
    return [*data, *run_tables(given.records, formats.rows)]


class _ReadOnce:
    """A bare source's read, done once, on the first resource that asks (thread-safe: dlt may
    extract resources on threads of its own). A read that failed fails every later ask with the
    same error, without reading again."""

    def __init__(self, read: Callable[[], Reads]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._reads: Reads | None = None
        self._failed: BaseException | None = None

    def __call__(self) -> Reads:
        with self._lock:
            if self._failed is not None:
                raise self._failed
            if self._reads is None:
                try:
                    self._reads = self._read()
                except BaseException as err:
                    self._failed = err
                    raise
            return self._reads


@dataclass(frozen=True)
class _Handover:
    """What each resource hands over of the one read."""

    reads: Callable[[], Reads]

    def subscriptions(self) -> SubscriptionsHandover:
        handover = self.reads().subscriptions
        assert handover is not None  # made only when the run reads subscriptions
        return handover

    def per_user(self, table: str) -> Callable[[], PerUserHandover | None]:
        return lambda: self.reads().per_user.get(table)

    def unlisted(self) -> Rows:
        return self.reads().unlisted

    def records(self) -> tuple[SyncRecord, Rows]:
        reads = self.reads()
        return reads.record, reads.problems


def _active_pipeline() -> Any | None:
    """The pipeline this source is created for (the last one made or attached), if any."""

    context = Container()[PipelineContext]
    return context.pipeline() if context.is_active() else None
