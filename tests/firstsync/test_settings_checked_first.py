"""Settings are checked before any work (issue 35): a misspelt `[analytics]` key that leaves the
price book incomplete (`price_yearley`) stops `devportal sync` before anything is loaded, in one
line naming what is unset and the key that was probably meant, exit 2; the warehouse is not
even created. Fixed, the same sync loads and builds. Real sandbox, the CLI in its own process in
a project folder (tests/firstsync/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.firstsync.conftest import write_settings
from tests.helpers import CliResult


def test_a_misspelt_price_key_stops_the_sync_before_it_loads(
    project: Path, in_folder: Callable[..., CliResult], sandbox_factory: Any
) -> None:
    sb = sandbox_factory(subscriptions=50, users=10, seed=35)
    secrets = f'[sources.devportal]\naccess_token = "{sb.token}"\n'
    typo = (
        f'[sources.devportal]\nbase_url = "{sb.base_url}"\n\n'
        '[analytics]\ncurrency = "EUR"\nprice_monthly = 4.99\nprice_yearley = 49.99\n'
    )
    write_settings(project, typo, secrets)
    refused = in_folder("sync")
    assert refused.code == 2, refused.err
    [error] = [line for line in refused.err.splitlines() if line.startswith("devportal: error:")]
    assert "price_yearly is not set while price_monthly is" in error, error
    assert "unknown key price_yearley under [analytics]" in error, error
    assert "did you mean price_yearly?" in error, error
    assert "Traceback" not in refused.err and "sync ok" not in refused.out
    assert not (project / "warehouse" / "warehouse.duckdb").exists()  # nothing loaded

    write_settings(project, typo.replace("price_yearley", "price_yearly"), secrets)
    done = in_folder("sync")
    assert done.code == 0, done.err
    assert done.out.startswith("sync ok") and (project / "warehouse" / "warehouse.duckdb").exists()


def test_a_misspelt_section_is_named_beside_what_it_left_unset(
    project: Path, in_folder: Callable[..., CliResult]
) -> None:
    """`[source.devportal]` (one letter short): dlt reads nothing from it; the run says so in
    devportal's own words, the section it probably meant, before "no base_url"."""
    write_settings(project, '[source.devportal]\nbase_url = "http://127.0.0.1:9"\n')
    result = in_folder("sync")
    assert result.code == 2, result.err
    warning, error = result.err.splitlines()
    config = project / ".dlt" / "config.toml"
    assert warning == (
        f"devportal: warning: unknown section [source.devportal] in {config} is ignored: did you "
        "mean [sources.devportal]?"
    )
    assert error.startswith("devportal: error: no base_url"), error
    # dlt's own sections are not ours to judge
    write_settings(
        project,
        '[sources.devportal]\nbase_url = "http://127.0.0.1:9"\n[runtime]\nlog_level = "WARNING"\n'
        "[destination.postgres]\nx = 1\n[normalize]\nworkers = 1\n",
    )
    assert "unknown section" not in in_folder("status").err
