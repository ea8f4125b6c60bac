"""The demo's story (`devportal demo`): a sandbox whose clock ends near today, and the example
app's manifest recorded as two releases, an older one first and the current one last.

The command itself (devportal.cli.demo_command) runs the sandbox, the syncs and the clock advances and
prints what happens; this module holds what is not printing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devportal.base.errors import ConfigError, DevportalError
from devportal.manifest import load_manifest
from devportal.warehouse.engines import connect

if TYPE_CHECKING:
    from devportal.manifest.findings import ManifestReport
    from devportal.warehouse.target import Target

# package data (a link to examples/demo-app in a checkout, real files in a wheel)
DEMO_APP = Path(__file__).parent / "demo_app"


def clock_start(advance_days: float, syncs: int) -> datetime:
    """Midnight (naive UTC) such that SYNCS syncs, ADVANCE_DAYS apart, end near today: the
    report then reads like a live business."""
    start = datetime.now(UTC) - timedelta(days=advance_days * (syncs - 1))
    return start.replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)


def record_release(target: Target, *, first: bool) -> ManifestReport:
    """Record the example app's manifest in TARGET; FIRST records the older release (v1.3.0:
    the same bundle before facebook and mixer were added). Returns the manifest's ManifestReport."""
    bundle = DEMO_APP
    with tempfile.TemporaryDirectory() as tmp:
        if first:
            bundle = Path(tmp) / "demo-app"
            shutil.copytree(DEMO_APP, bundle)
            manifest = json.loads((bundle / "manifest.json").read_text())
            manifest["version"] = "1.3.0"
            manifest["supportedPlatforms"] = ["twitch", "youtube"]
            (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2))
        result = load_manifest(bundle, target)
    return result.report


# The demo's price book: the sandbox world sells monthly and yearly subscriptions (15% of new
# ones yearly), priced as an app store might, the year at ten months' price.
DEMO_PRICES = {"currency": "EUR", "price_monthly": "4.99", "price_yearly": "49.99"}
USER_PRICE_KEYS = ("price_monthly", "price_yearly", "price_unknown", "prices_file")


@contextmanager
def demo_prices() -> Iterator[None]:
    """The demo's price book (DEMO_PRICES) for the block, as the `ANALYTICS__<KEY>` variables dlt
    reads, filling only what the user left unset: a price of the user's own (any flat price, or
    a prices_file) wins whole, and the user's currency is kept with the demo's prices. The
    user's .dlt/config.toml is never touched; the variables set are removed afterwards. A bad
    setting is left for the models' build to refuse in its one line."""
    # deferred: loads dlt, kept out of startup
    from devportal.settings.config import resolve_analytics

    try:
        cfg = resolve_analytics()
    except DevportalError:
        cfg = None
    keys = []
    if cfg is not None and all(getattr(cfg, key) in (None, "") for key in USER_PRICE_KEYS):
        keys = ["price_monthly", "price_yearly"] + (["currency"] if cfg.currency is None else [])
    names = {key: f"ANALYTICS__{key.upper()}" for key in keys}
    os.environ.update({names[key]: DEMO_PRICES[key] for key in keys})
    try:
        yield
    finally:
        for name in names.values():
            os.environ.pop(name, None)


POSTGRES_ENV = "DESTINATION__POSTGRES__CREDENTIALS"


@dataclass(frozen=True)
class LocalPostgres:
    """A running throwaway server: pgserver's handle and the folder of its data and socket."""

    server: Any
    folder: str

    def uri(self, database: str = "postgres") -> str:
        """dlt's form: a host is required (the socket folder goes in `host=`), and a password,
        a placeholder: the server trusts local connections."""
        return f"postgresql://postgres:throwaway@localhost/{database}?host={self.folder}"


@contextmanager
def local_postgres() -> Iterator[LocalPostgres]:
    """A local PostgreSQL 16 cluster (the pip package `pgserver`), stopped and removed after.

    It listens on a Unix socket in its own folder only and trusts local connections. As root,
    pgserver runs the server as an OS user of its own, which must reach the folder: it is made
    by `tempfile.mkdtemp`, not under a 0700 folder of this user (as pytest's are)."""
    try:
        import pgserver  # deferred: loads pgserver, kept out of startup
    except ImportError as err:
        raise ConfigError(
            f"no PostgreSQL: set {POSTGRES_ENV} to a server's URI, or install pgserver "
            "(`pip install pgserver`) for a throwaway one"
        ) from err
    folder = tempfile.mkdtemp(prefix="devportal-pg-")
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:  # what pgserver raises
        shutil.rmtree(folder, ignore_errors=True)
        raise DevportalError(f"cannot start a throwaway PostgreSQL with pgserver: {err}") from err
    try:
        yield LocalPostgres(server, folder)
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """`local_postgres` for the demo: yields its URI, also set as
    DESTINATION__POSTGRES__CREDENTIALS meanwhile."""
    previous = os.environ.get(POSTGRES_ENV)
    with local_postgres() as local:
        os.environ[POSTGRES_ENV] = local.uri()
        try:
            yield local.uri()
        finally:
            if previous is None:
                os.environ.pop(POSTGRES_ENV, None)
            else:
                os.environ[POSTGRES_ENV] = previous


def require_empty_postgres(target: Target) -> None:
    """The demo writes the datasets `devportal` and `analytics`: refuse a server that has them."""
    with connect(target, read_only=True) as engine:
        taken = engine.execute(
            "select schema_name from information_schema.schemata "
            "where schema_name in ('devportal', 'analytics') order by 1"
        )
    if taken:
        raise ConfigError(
            f"the demo writes schemas devportal and analytics, and this PostgreSQL database "
            f"already has {', '.join(r[0] for r in taken)}: point {POSTGRES_ENV} at an empty "
            "database, or unset it for a throwaway local server"
        )
