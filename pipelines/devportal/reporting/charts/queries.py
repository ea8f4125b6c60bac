"""The charts' queries and reading them alike on every engine.

The charts' queries are files in `sql/charts/`, one per chart (`<chart>_chart.sql`: named apart
from the models they read), each opening with a comment saying what the chart shows;
`sql/report/report_row.sql` is the report's read of its one row of figures. They ship as package data beside
the models (a link to the repository's sql/ in a checkout). Each names the model(s) it reads as
`analytics.<model>`, which `qualified` turns into the engine's full name, and is portable SQL
run as written (no translation) by DuckDB and PostgreSQL alike. `read` returns the same
DataFrame on either engine: every value made a plain Python value by `plain` first.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.base.errors import DevportalError

if TYPE_CHECKING:
    import pandas as pd

    from devportal.warehouse.engines import Engine

SQL_DIR = Path(__file__).parents[2] / "sql"  # devportal/sql, beside the models
CHARTS_DIR = "charts"


@functools.cache
def query_file(name: str) -> str:
    """The query in `sql/<NAME>.sql` (e.g. "charts/monthly_churn_chart", "report/report_row"), read on
    first use and kept. A missing file is a DevportalError saying to reinstall."""
    path = SQL_DIR / f"{name}.sql"
    try:
        return path.read_text(encoding="utf-8").strip().rstrip(";").strip()
    except OSError as err:
        raise DevportalError(
            f"sql/{name}.sql cannot be read ({err.strerror or err}); "
            "reinstall devportal, which ships it"
        ) from err


# -- reading the models, alike on every engine ------------------------------------------------

_ANALYTICS_NAME = re.compile(r"\banalytics\.(\w+)\b")


def qualified(engine: Engine, sql: str) -> str:
    """SQL with each `analytics.<model>` written as the engine's full name for it (the
    warehouse's catalog on DuckDB). A plain text substitution: for queries like QUERIES'."""
    return _ANALYTICS_NAME.sub(lambda m: engine.qualify("analytics", m.group(1)), sql)


def plain(value: Any) -> Any:
    """VALUE as the plain Python value DuckDB gives for it, whichever engine and driver read it.

    Decimal (PostgreSQL's numeric: sums, divisions) becomes int when it has no fractional
    digits, else float; numpy and pandas scalars become Python ones; a timestamp with a time
    zone becomes the naive UTC timestamp (DuckDB's models and the API's clock are UTC); NaN
    and NaT become None.
    """
    if type(value).__module__.split(".")[0] in ("numpy", "pandas"):
        value = _builtin(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _builtin(value: Any) -> Any:
    """A numpy or pandas scalar as the Python value it stands for."""
    # deferred: numpy and pandas cost ~0.3 s at startup; a value of theirs means they are loaded
    import numpy as np
    import pandas as pd

    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    if value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, np.generic):
        return value.item()
    return value


def read(engine: Engine, sql: str) -> pd.DataFrame:
    """A query on the `analytics` models as a DataFrame, the same on every engine: values made
    `plain`, then typed by pandas alike (PostgreSQL sessions are in UTC, see `engines`)."""
    # deferred: pandas costs ~0.3 s at startup
    import pandas as pd

    names, rows = engine.columns(qualified(engine, sql))
    records = [tuple(plain(value) for value in row) for row in rows]
    return pd.DataFrame.from_records(records, columns=names)
