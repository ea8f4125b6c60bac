"""Where a command writes and reads: one `Target`, made once from `--warehouse` and
`--destination` (or a caller's arguments), and asked everywhere else.

The decisions it owns, each written once here:
- which destination: the DuckDB warehouse file (`--destination` unset or `duckdb`; dlt's own
  `duckdb` would be a file named after the pipeline in the working directory), or any other dlt
  destination, by name or as a dlt destination object;
- how a load is made whole (`rollback`): the DuckDB file through its draft (`draft`),
  PostgreSQL through a backup of the dataset's tables (`schema`), anything else without one
  (`none`);
- which engine runs the SQL models and the report: `duckdb`, `postgres`, or none;
- which dlt pipeline (state, packages) it has: `devportal`, or `devportal_<destination>`.

Which destination a command uses when it is given neither `--destination` nor `--warehouse` is
a setting, `warehouse_destination` under `[sources.devportal]`
(`SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION`), read
by `config.home_destination`; `home_setting` words it for the messages that name it.

The CLI makes one per command (`cli.options.target`) and hands it down; every function below
takes that `Target`. It also carries the command's settings (`settings`, a
`settings.command.CommandSettings`): each section is resolved once per command and asked
there. The Python entry points (`sync.sync`, `models.build`, `report.collect`,
`engines.connect`, `manifest.load_manifest`, ...) also take the DuckDB warehouse file's path in
its place (`Target.of`, the one place a path or a destination name becomes a `Target`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devportal.base.errors import ConfigError
from devportal.settings.command import CommandSettings

PIPELINE_NAME = "devportal"
# the engines the SQL models and the report run on
ENGINES = ("duckdb", "postgres")


@dataclass(frozen=True)
class Target:
    warehouse: Path  # the DuckDB file; for another destination, where dlt's folder and the lock go
    destination: Any = None  # None: the DuckDB file; else a dlt destination name or object
    # the command's settings, each section resolved once, handed down with the target
    settings: CommandSettings = field(
        default_factory=CommandSettings, compare=False, hash=False, repr=False
    )

    @classmethod
    def of(cls, warehouse: Where, destination: Any = None) -> Target:
        """The target of WAREHOUSE (the DuckDB file's path) and DESTINATION (None or `duckdb`:
        that file; else a dlt destination name or object). A Target is returned as it is."""
        if isinstance(warehouse, Target):
            if destination is not None:
                raise TypeError("Target.of: a Target already names its destination")
            return warehouse
        if isinstance(destination, str) and destination.strip().lower() == "duckdb":
            destination = None
        return cls(Path(warehouse), destination)

    @property
    def name(self) -> str:
        """The destination's name: `duckdb` for the warehouse file."""
        if self.destination is None:
            return "duckdb"
        if isinstance(self.destination, str):
            return self.destination.strip().lower()
        return str(getattr(self.destination, "destination_name", "destination")).lower()

    @property
    def is_file(self) -> bool:
        """The DuckDB warehouse file: drafts, file locks, readers beside the writer."""
        return self.destination is None

    @property
    def is_postgres(self) -> bool:
        return self.name == "postgres"

    @property
    def rollback(self) -> str:
        """How a load is made whole (what puts the warehouse back when it fails): `draft`,
        `schema` or `none`."""
        return "draft" if self.is_file else "schema" if self.is_postgres else "none"

    @property
    def engine(self) -> str | None:
        """The engine the models and the report run on; None where they do not run: another
        destination, or a dlt destination object (where it writes is its own business)."""
        if self.destination is not None and not isinstance(self.destination, str):
            return None
        return self.name if self.name in ENGINES else None

    def require_engine(self) -> str:
        """The engine, or one line saying the models and the report do not run there."""
        if self.engine is None:
            raise ConfigError(
                f"the SQL models and the report run on {' and '.join(ENGINES)}, not "
                f"{self.name}: load with `devportal sync --destination ...` and query the raw "
                "tables there"
            )
        return self.engine

    @property
    def pipeline_name(self) -> str:
        """`devportal` for the warehouse file, `devportal_<name>` for another destination: each
        has its own state and packages, so syncing two from one folder never mixes them."""
        return PIPELINE_NAME if self.is_file else f"{PIPELINE_NAME}_{self.name}"


# the setting naming the warehouse every command uses (`config.home_destination` reads it)
HOME_KEY = "warehouse_destination"
HOME_ENV = "SOURCES__DEVPORTAL__WAREHOUSE_DESTINATION"


def home_setting(name: str) -> str:
    """The setting that makes the destination NAME (`postgres`, `duckdb`) the warehouse of every
    command, as a message names it."""
    return (
        f'{HOME_KEY} = "{name}" under [sources.devportal] in .dlt/config.toml (or '
        f"{HOME_ENV}={name})"
    )


# what the Python entry points take: a Target, or the DuckDB warehouse file's path
Where = Target | str | Path
