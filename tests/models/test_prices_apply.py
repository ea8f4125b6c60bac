"""Prices apply when set (issue 32): a price set or changed in `.dlt/config.toml` after the
models were built is in the next `report` and `digest`, with no manual step (the models are
rebuilt with it: `models.applied`, `cli.options.figures_current`); while the warehouse cannot
be written the figures are those built, and one warning line says which prices differ and the
command that applies them. Real sandbox, the real CLI in its own process in a project folder,
on DuckDB and PostgreSQL."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from devportal.models.applied import seed_differences
from devportal.models.seeds import price_seeds, status_map_seed
from devportal.settings.prices import price_book
from devportal.warehouse.writer_lock import writer_lock
from tests.helpers import OnEngine, _environ, run_devportal, sync_from


def _config(project: Path, monthly: int | None) -> None:
    """[analytics] prices of MONTHLY a month whatever the period (a year is 12 months), or
    none: every usable subscription then adds MONTHLY to MRR."""
    folder = project / ".dlt"
    folder.mkdir(parents=True, exist_ok=True)
    text = "[analytics]\n"
    if monthly is not None:
        text += (
            f'currency = "EUR"\nprice_monthly = {monthly}\nprice_yearly = {monthly * 12}\n'
            f"price_unknown = {monthly}\n"
        )
    (folder / "config.toml").write_text(text, encoding="utf-8")


def _report(engine: OnEngine, project: Path) -> tuple[dict[str, Any], str]:
    result = run_devportal(
        "report", "--format", "json", *engine.argv(), env=_env(engine), cwd=project
    )
    assert result.code == 0, result.err
    return json.loads(result.out), result.err


def _env(engine: OnEngine) -> dict[str, str | None]:
    # only the project's .dlt/ speaks: no [analytics] setting from this process's environment
    unset: dict[str, str | None] = {
        key: None
        for key in ("ANALYTICS__CURRENCY", "ANALYTICS__PRICE_MONTHLY", "ANALYTICS__PRICE_YEARLY")
    }
    return {**unset, **engine.env}


def test_a_price_set_after_the_build_is_in_the_next_report(
    sandbox_factory: Any, engine: OnEngine, tmp_path: Path
) -> None:
    sb = sandbox_factory(subscriptions=120, users=60, seed=32)
    with _environ(engine.env):
        sync_from(sb, engine.warehouse, destination=engine.destination, build_models=True)
    project = tmp_path / "project"
    _config(project, None)
    figures, said = _report(engine, project)
    assert figures["mrr"] is None and figures["prices_hint"], figures
    usable = figures["usable_subscribers"]
    assert usable > 50

    # prices set in .dlt/config.toml: the next report has them, nothing run by hand
    _config(project, 5)
    figures, said = _report(engine, project)
    assert Decimal(str(figures["mrr"])) == 5 * usable, (figures["mrr"], usable)
    assert figures["prices_hint"] is None
    assert said == ""  # not a terminal, no --verbose: the rebuild is quiet

    # changed prices, the same
    _config(project, 7)
    figures, _ = _report(engine, project)
    assert Decimal(str(figures["mrr"])) == 7 * usable

    # the warehouse held by another writer: the figures as built, one line saying what differs
    _config(project, 9)
    page = tmp_path / "page.html"
    with _environ(engine.env), writer_lock(engine.target):
        figures, said = _report(engine, project)
        argv = ("report", "--html", str(page), *engine.argv())
        assert run_devportal(*argv, env=_env(engine), cwd=project).code == 0
    assert Decimal(str(figures["mrr"])) == 7 * usable
    # the figures as built, and the line saying what differs: in JSON, on the MRR tile
    assert "price_monthly 9 (the figures use 7)" in figures["prices_hint"]
    tile = page.read_text(encoding="utf-8").split('<div class="tile">')[1]
    assert "price_monthly 9 (the figures use 7)" in tile, tile
    lines = said.strip().splitlines()
    assert len(lines) == 1, said
    assert lines[0].startswith("devportal: warning: the figures use the settings of their last")
    assert "price_monthly 9 (the figures use 7)" in lines[0], lines[0]
    assert "price_yearly 108 (the figures use 84)" in lines[0], lines[0]
    command = "devportal models" + (" --destination postgres" if engine.destination else "")
    assert f"`{command}` applies them" in lines[0], lines[0]

    # the digest applies them as the report does
    digest = run_devportal("digest", "--no-post", *engine.argv(), env=_env(engine), cwd=project)
    assert digest.code == 0, digest.err
    assert "MRR" in digest.out and digest.err == "", (digest.out, digest.err)
    figures, said = _report(engine, project)
    assert Decimal(str(figures["mrr"])) == 9 * usable and said == ""

    # run from a folder with no [analytics] setting (not the project's): the figures keep the
    # prices of their build, no rebuild with none
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    figures, said = _report(engine, elsewhere)
    assert Decimal(str(figures["mrr"])) == 9 * usable and said == ""


def test_the_differences_name_each_setting_in_an_owners_words() -> None:
    def book(**analytics: Any) -> Any:
        from devportal.settings.config import AnalyticsConfig

        return price_book(AnalyticsConfig(**analytics))

    old = price_seeds(book(currency="EUR", price_monthly=4.99, price_yearly=49.99))
    new = price_seeds(book(currency="USD", price_monthly=5.49, price_yearly=49.99))
    built = {seed.name: seed.rows for seed in old}
    said = seed_differences(built, new)
    assert said == [
        "price_monthly 5.49 (the figures use 4.99)",
        "price_unknown 5.49 (the figures use 4.99)",  # unset: price_monthly's
        "currency USD (the figures use EUR)",
    ]
    assert seed_differences({seed.name: seed.rows for seed in new}, new) == []
    # prices first set, a status newly mapped, a build from before the price book
    none = price_seeds(book())
    said = seed_differences({seed.name: seed.rows for seed in none}, new)
    assert "price_monthly 5.49 (the figures have none)" in said
    mapped = status_map_seed({"paused": "canceled"})
    said = seed_differences({"status_map": status_map_seed({}).rows}, [mapped])
    assert said == ["status_map paused = canceled (the figures: other)"]
    assert seed_differences({"price_book": None}, new[1:]) == [
        "price_book (this build of the models predates it)"
    ]


# A read-only warehouse, as the kernel refuses it to a user without write permission: the
# build's last step, the draft renamed over the warehouse file in its folder, fails with
# EACCES. `chmod a-w` on the file and folder does this for a user; root writes through it, so
# the child process (run as root or not) also refuses that rename itself (sitecustomize), the
# same error at the same step, without any root trick.
_READ_ONLY = """
import errno, os
_warehouse = os.path.realpath(os.environ["DEVPORTAL_TEST_READ_ONLY"])
def _refusing(real):
    def rename(src, dst, *args, **kwargs):
        if os.path.realpath(os.fspath(dst)) == _warehouse:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(dst))
        return real(src, dst, *args, **kwargs)
    return rename
os.replace, os.rename = _refusing(os.replace), _refusing(os.rename)
"""


def _read_only(warehouse: Path, hooks: Path) -> dict[str, str | None]:
    """WAREHOUSE read-only (file and folder `chmod a-w`, and refused to root too): the
    environment a `run_devportal` then needs."""
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "sitecustomize.py").write_text(_READ_ONLY, encoding="utf-8")
    warehouse.chmod(0o444)
    warehouse.parent.chmod(0o555)
    return {"DEVPORTAL_TEST_READ_ONLY": str(warehouse), "PYTHONPATH": str(hooks)}


def test_prices_first_set_on_a_warehouse_that_cannot_be_written_are_never_no_prices(
    sandbox_factory: Any, engine: OnEngine, tmp_path: Path
) -> None:
    """The last build had no prices, prices are set now and the warehouse cannot be written
    (another writer holds it; on DuckDB also a read-only file and folder): text, JSON, the
    page and its money charts never say "no prices set"; one line says which prices differ,
    the command that applies them and that it needs the warehouse writable, with no errno and
    no path."""
    sb = sandbox_factory(subscriptions=80, users=40, seed=321)
    with _environ(engine.env):
        sync_from(sb, engine.warehouse, destination=engine.destination, build_models=True)
    project = tmp_path / "project"
    _config(project, None)
    figures, _ = _report(engine, project)
    assert figures["prices_hint"].startswith("no prices set")
    _config(project, 5)
    command = "devportal models" + (" --destination postgres" if engine.destination else "")

    def unapplied(env: dict[str, str | None], why: str) -> None:
        page = tmp_path / "page.html"
        for fmt in ("json", "table"):
            argv = ("report", "--format", fmt, "--html", str(page), *engine.argv())
            result = run_devportal(*argv, env={**_env(engine), **env}, cwd=project)
            assert result.code == 0, result.err
            said = [line for line in result.err.splitlines() if not line.startswith("wrote ")]
            assert len(said) == 1, result.err
            for text in (said[0], result.out, page.read_text(encoding="utf-8")):
                assert "no prices set" not in text, text
                assert "Errno" not in text and ".dlt/next" not in text, text
            assert "price_monthly 5 (the figures have none)" in said[0], said[0]
            assert f"`{command}` applies them once the warehouse can be written" in said[0]
            assert why in said[0], said[0]
            if fmt == "json":
                hint = json.loads(result.out)["prices_hint"]
                assert "price_yearly 60 (the figures have none)" in hint and why in hint, hint
                assert json.loads(result.out)["mrr"] is None  # the figures as built
            else:
                assert "price_monthly 5 (the figures have none)" in result.out, result.out
        html = page.read_text(encoding="utf-8")
        assert "prices not applied yet" in html and "price_monthly 5" in html

    with _environ(engine.env), writer_lock(engine.target):
        unapplied({}, "another run is writing the warehouse")
    if engine.name == "duckdb":
        env = _read_only(engine.warehouse, tmp_path / "hooks")
        try:
            unapplied(env, "the warehouse file or its folder is read-only")
        finally:
            engine.warehouse.parent.chmod(0o755)
            engine.warehouse.chmod(0o644)
    # writable again: the next report has the prices, nothing run by hand
    figures, said = _report(engine, project)
    assert figures["mrr"] is not None and figures["prices_hint"] is None, (figures, said)


def test_why_the_models_could_not_be_rebuilt_is_said_without_errno_or_path() -> None:
    from devportal.base.errors import ConfigError, DevportalError, WarehouseBusy
    from devportal.cli.options import why_not_written

    def raised(outer: Exception, inner: BaseException) -> Exception:
        try:
            try:
                raise inner
            except BaseException as cause:
                raise outer from cause
        except Exception as err:
            return err

    denied = PermissionError(1, "Operation not permitted")
    denied.filename, denied.filename2 = "/w/.wh.dlt/next/wh.duckdb", "/w/wh.duckdb"
    for err in (
        raised(DevportalError(f"cannot publish: {denied}"), denied),
        raised(ConfigError("cannot write in /w: permission denied"), PermissionError(13, "x")),
        raised(DevportalError("no"), OSError(30, "Read-only file system")),
    ):
        assert why_not_written(err) == "the warehouse file or its folder is read-only for this user"
    busy = WarehouseBusy("warehouse /w/wh.duckdb is busy: a sync (pid 7) is running")
    assert why_not_written(busy).startswith("another run is writing the warehouse")
    other = raised(
        DevportalError("cannot build: [Errno 28] No space left on device: '/w/.wh.dlt/next/x'"),
        OSError(28, "No space left on device"),
    )
    assert why_not_written(other) == "cannot build: No space left on device"


def test_the_init_templates_empty_analytics_section_keeps_the_demos_prices(
    tmp_path: Path,
) -> None:
    """`devportal init` writes `[analytics]` with every key commented out: that sets nothing. The
    demo run in that project (its price book), then `devportal report` there, as the demo's
    next step says: the demo's prices, no rebuild without them, no "no prices set"."""
    project = tmp_path / "project"
    env: dict[str, str | None] = {
        key: None for key in ("ANALYTICS__CURRENCY", "ANALYTICS__PRICE_MONTHLY")
    }
    env["ANALYTICS__PRICE_YEARLY"] = None
    assert run_devportal("init", str(project), env=env).code == 0
    config = (project / ".dlt" / "config.toml").read_text(encoding="utf-8")
    assert "\n[analytics]\n" in config and "\n# price_monthly" in config
    warehouse = project / "warehouse" / "demo.duckdb"
    demo = ("demo", "--warehouse", str(warehouse), "--subscriptions", "300", "--users", "40")
    done = run_devportal(*demo, "--syncs", "2", env=env, cwd=project, timeout=300)
    assert done.code == 0, done.err
    result = run_devportal(
        "report", "--format", "json", "--warehouse", str(warehouse), env=env, cwd=project
    )
    assert result.code == 0, result.err
    figures = json.loads(result.out)
    assert figures["mrr"] is not None and figures["prices_hint"] is None, figures
    assert result.err == "", result.err  # nothing differs: nothing rebuilt, nothing to warn

    # a key set under it is a setting: the next report applies it
    (project / ".dlt" / "config.toml").write_text(
        config.replace("\n[analytics]\n", '\n[analytics]\ncurrency = "USD"\n'), encoding="utf-8"
    )
    result = run_devportal(
        "report", "--format", "json", "--warehouse", str(warehouse), env=env, cwd=project
    )
    assert result.code == 0, result.err
    # currency alone is no price book: no prices set now, and the report says so
    assert json.loads(result.out)["prices_hint"].startswith("no prices set")
