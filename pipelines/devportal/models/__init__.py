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
from devportal.models.build import (
    CAP_MB_PER_VERSION,
    MEMORY_FLOOR_MB,
    build,
    build_after_load,
    summary_line,
)
from devportal.models.checks import (
    SAMPLE_ROWS,
    TESTS_DIR,
    DataTestsFailed,
    data_test_sql,
    data_tests,
    reconciliations,
    run_tests,
    seed_tests,
)
from devportal.models.engine_sql import EngineSql, for_engine, render
from devportal.models.portability import translate
from devportal.models.project import (
    LAYERS,
    OVERRIDE_ENGINES,
    SCHEMA,
    SOURCE_DIALECT,
    SQL_DIR,
    DataTest,
    Model,
    load_models,
    order_models,
    table_references,
)
from devportal.models.seeds import (
    SEED_TESTS,
    SEEDS,
    SPEC_STATUSES,
    STATUS_MAP,
    Seed,
    seeds_from_settings,
    status_map_seed,
)

__all__ = [
    "CAP_MB_PER_VERSION",
    "LAYERS",
    "MEMORY_FLOOR_MB",
    "OVERRIDE_ENGINES",
    "SAMPLE_ROWS",
    "SCHEMA",
    "SEEDS",
    "SEED_TESTS",
    "SOURCE_DIALECT",
    "SPEC_STATUSES",
    "SQL_DIR",
    "STATUS_MAP",
    "TESTS_DIR",
    "DataTest",
    "DataTestsFailed",
    "EngineSql",
    "Model",
    "Seed",
    "build",
    "build_after_load",
    "data_test_sql",
    "data_tests",
    "differences",
    "for_engine",
    "load_models",
    "order_models",
    "reconciliations",
    "render",
    "run_tests",
    "seed_tests",
    "seeds_from_settings",
    "status_map_seed",
    "summary_line",
    "table_references",
    "translate",
]
