"""What the notebooks (`notebooks/*.ipynb`, also written by `devportal init`) share: which
warehouse they read, and devportal's errors shown as their one line in a notebook.

Which warehouse (`locate`): the notebook's `WAREHOUSE` parameter, else `$DEVPORTAL_WAREHOUSE`
(`make notebook` sets it), else the warehouse `devportal sync` writes by default
(`warehouse/warehouse.duckdb`) when it exists, else the demo's (`warehouse/demo.duckdb`): the
Makefile's rule for `make models` and `make report`. A relative path is looked for from the
kernel's folder, then from the folder above it (Jupyter starts the kernel in `notebooks/`,
devportal runs from the folder above). `DESTINATION`, else `$DEVPORTAL_DESTINATION`
(`postgres`): the database of `DESTINATION__POSTGRES__CREDENTIALS` instead of a DuckDB file;
given neither a warehouse nor a destination, the configured home (`warehouse_destination`
under `[sources.devportal]`, or `SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION`), as every command
reads it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devportal.base.errors import DevportalError, scrub
from devportal.warehouse import engines
from devportal.warehouse.paths import ANALYTICS_SCHEMA, DEFAULT_WAREHOUSE, DEMO_WAREHOUSE, shown
from devportal.warehouse.target import Target

WAREHOUSE_ENV = "DEVPORTAL_WAREHOUSE"
DESTINATION_ENV = "DEVPORTAL_DESTINATION"
# the configured warehouse, then the demo's (the Makefile's WAREHOUSE rule)
DEFAULTS = (DEFAULT_WAREHOUSE, DEMO_WAREHOUSE)


def _folders() -> tuple[Path, Path]:
    """Where a relative path is looked for: the kernel's folder, then the one above."""
    here = Path.cwd()
    return here, here.parent


def _found(path: Path) -> Path | None:
    """PATH if it exists (a relative one from the kernel's folder or the one above), as an
    absolute path without `..`; None when it is nowhere."""
    tried = [path] if path.is_absolute() else [folder / path for folder in _folders()]
    for candidate in tried:
        if candidate.exists():
            return Path(os.path.normpath(candidate.absolute()))
    return None


def locate(warehouse: str | Path | None = None, destination: str | None = None) -> Target:
    """The `Target` a notebook reads (see the module's docstring); one line when its DuckDB
    warehouse is not there."""
    destination = destination or os.environ.get(DESTINATION_ENV) or None
    given, origin = warehouse, "the notebook's WAREHOUSE"
    if not given and os.environ.get(WAREHOUSE_ENV):
        given, origin = os.environ[WAREHOUSE_ENV], WAREHOUSE_ENV
    if destination is None and not given:  # the configured home, as every command reads it
        from devportal.settings.config import home_destination  # deferred: dlt's configuration

        destination = home_destination()
    on_file = Target.of(DEFAULT_WAREHOUSE, destination).is_file
    if given:
        path = _found(Path(given))
        if path is None and on_file:
            raise DevportalError(
                f"no warehouse at {shown(Path(given))} ({origin}): run `devportal sync` (or "
                f"`devportal demo`) to make one, or set {WAREHOUSE_ENV} to an existing warehouse "
                "file"
            )
        return Target.of(path or Path(given), destination)
    for default in DEFAULTS:
        if (path := _found(Path(default))) is not None:
            return Target.of(path, destination)
    if not on_file:  # the warehouse path only places dlt's folder: none is needed to read
        return Target.of(DEFAULT_WAREHOUSE, destination)
    here, above = _folders()
    raise DevportalError(
        f"no warehouse yet: neither {DEFAULT_WAREHOUSE} (what `devportal sync` writes) nor "
        f"{DEMO_WAREHOUSE} (the demo's) is in {shown(here)} or {shown(above)}; run `devportal "
        f"sync` (or `devportal demo`) first, or set {WAREHOUSE_ENV} to your warehouse file"
    )


@contextmanager
def connect(warehouse: str | Path | None = None, destination: str | None = None) -> Iterator[Any]:
    """A read-only engine on the warehouse a notebook reads (`locate`), its `analytics` models
    built; prints which it reads. In a notebook, devportal's errors show as one line from here
    on (`errors_as_one_line`)."""
    errors_as_one_line()
    target = locate(warehouse, destination)
    with engines.connect(target, read_only=True) as engine:
        on_postgres = engine.dialect == "postgres"
        if "as_of" not in engine.relations(ANALYTICS_SCHEMA):
            where = "the PostgreSQL database" if on_postgres else f"warehouse {target.warehouse}"
            build = (
                "devportal models --destination postgres"
                if on_postgres
                else f"devportal models --warehouse {target.warehouse}"
            )
            raise DevportalError(f"{where} has no analytics models yet: run `{build}`")
        print("reading", "PostgreSQL" if on_postgres else target.warehouse)
        yield engine


def errors_as_one_line() -> None:
    """In IPython (a notebook's kernel), show a `DevportalError` as the CLI does, one line
    `devportal: error: <cause and fix>`, instead of a traceback. The cell still fails, so "Run
    All" stops there. A custom handler the user installed is left alone."""
    ipython = sys.modules.get("IPython")  # loaded when running in IPython; never imported here
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or shell.custom_exceptions:
        return

    def one_line(
        shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None
    ) -> list[str]:
        lines = [f"devportal: error: {scrub(str(value))}"]
        shell._showtraceback(etype, value, lines)
        return lines

    shell.set_custom_exc((DevportalError,), one_line)
