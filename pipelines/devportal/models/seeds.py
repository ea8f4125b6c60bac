"""Seeds: the tables the runner writes from settings at every build.

They are written in the build's transaction, before any model, so the models and the settings
they were built with are one snapshot. `analytics.status_map(status, treated_as)` is
`[analytics] status_map` (`devportal.config.resolve_analytics`) with the two statuses the spec
shows (`active`, `canceled`, each treated as itself): how churn, renewal and cancellation
figures treat each status as sent (a status not in it is "other";
sql/staging/stg_subscriptions.sql). A model reads a seed like a model (`analytics.<name>`); a
seed no model reads is not written; no SQL file may take a seed's name; seeds have data tests
too (`SEED_TESTS`, written like a model header's `@test` lines). The build's summary lists the
seeds written under `seeds`, apart from `built`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devportal import config

STATUS_MAP = "status_map"
SEEDS = (STATUS_MAP,)
SEED_TESTS: dict[str, tuple[str, ...]] = {
    STATUS_MAP: (
        "unique(status)",
        "not_null(status, treated_as)",
        f"accepted_values(treated_as: {', '.join(config.STATUS_TREATMENTS)})",
    ),
}
# the statuses the spec shows: each treated as itself, whatever [analytics] status_map says
SPEC_STATUSES = config.STATUS_TREATMENTS


@dataclass(frozen=True)
class Seed:
    """A table written from settings at every build: `analytics.<name>` of COLUMNS (name, type;
    types both engines spell alike) holding ROWS."""

    name: str
    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[Any, ...], ...]


def status_map_seed(status_map: Mapping[str, str] | None) -> Seed:
    """`analytics.status_map`: each status and the treatment churn, renewal and cancellation
    figures give it: the spec's two as themselves, then `[analytics] status_map` (validated by
    `config.resolve_analytics`) in status order."""
    rows = [(status, status) for status in SPEC_STATUSES]
    rows += sorted((str(k), str(v)) for k, v in (status_map or {}).items())
    return Seed(STATUS_MAP, (("status", "varchar"), ("treated_as", "varchar")), tuple(rows))


def seeds_from_settings() -> list[Seed]:
    """Every seed, from the settings as dlt resolves them now (one-line ConfigError)."""
    return [status_map_seed(config.resolve_analytics().status_map)]
