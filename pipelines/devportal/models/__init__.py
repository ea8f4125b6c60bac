"""Runs the SQL project in `sql/` into the schema `analytics`, on DuckDB or PostgreSQL, and tests it.

One job per module, imports running one way (seeds <- project <- portability <- engine_sql <-
checks <- build <- applied):

    seeds        the tables written from settings at every build (`analytics.status_map`)
    project      reading `sql/staging`, `sql/intermediate`, `sql/marts`: headers, directives, order
    portability  the lint of what sqlglot translates wrong, and the translation (`translate`,
                 kept in a file beside the warehouse by `Translations`)
    engine_sql   a model as each engine runs it: translation or override, stand-ins, catalog names
    checks       data tests: the header and seed tests, and the reconciliations in `sql/tests/`
    build        the runner: whole or nothing (one transaction, in the draft on DuckDB), the
                 memory cap, each model's time, PostgreSQL's statistics, `build`,
                 `build_after_load`
    applied      whether the models were built with the settings as they are now (`differences`)

Callers use the names below (`from devportal import models; models.build(...)`).
"""

from devportal.models.applied import differences
from devportal.models.build import build, build_after_load, summary_line
from devportal.models.seeds import seeds_from_settings

__all__ = [
    "build",
    "build_after_load",
    "differences",
    "seeds_from_settings",
    "summary_line",
]
