"""The settings of one command: each section resolved at most once, then handed down.

A command makes one `Target` (`cli.options.target`) and hands it to everything it calls; the
target carries the command's `CommandSettings` (`target.settings`), so whatever needs a setting
asks it there rather than resolving the section again. Each section is resolved through its own
resolver (`config.resolve`, `config.resolve_analytics`, `alerts.resolve_alerts`: the one-line
errors are theirs) the first time it is asked for, and kept: a `devportal sync` resolves
`[sources.devportal]`, `[analytics]` and `[alerts]` once each, before its first request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the resolvers import dlt's configuration: only once a section is asked for
    from devportal.settings.alerts import AlertsConfig
    from devportal.settings.config import AnalyticsConfig, DevportalConfig, LoadSettings


class CommandSettings:
    """One command's settings, each section resolved on first use and kept."""

    def __init__(self) -> None:
        self._sources: dict[tuple[tuple[str, str], ...], DevportalConfig] = {}
        self._load: LoadSettings | None = None
        self._analytics: AnalyticsConfig | None = None
        self._alerts: AlertsConfig | None = None

    def source(self, *, require_api: bool = True, **explicit: Any) -> DevportalConfig:
        """`[sources.devportal]` with the non-None EXPLICIT values on top (`config.resolve`);
        REQUIRE_API: a base URL and a token must be set."""
        given = {k: v for k, v in explicit.items() if v is not None}
        key = tuple(sorted((k, repr(v)) for k, v in given.items()))
        from devportal.settings import config  # deferred: dlt's configuration (startup)

        cfg = self._sources.get(key)
        if cfg is None:
            cfg = self._sources[key] = config.resolve(require_api=False, **given)
        return config.require_endpoint(cfg) if require_api else cfg

    def load(self) -> LoadSettings:
        """How the DuckDB warehouse is loaded (`duckdb_memory_limit`, `duckdb_threads`): the
        resolved source's, else only these (a bad HTTP setting is the sync's to refuse)."""
        if self._sources:
            return next(iter(self._sources.values()))
        if self._load is None:
            from devportal.settings.config import resolve_load  # deferred: dlt (startup)

            self._load = resolve_load()
        return self._load

    def analytics(self) -> AnalyticsConfig:
        """`[analytics]`: the price book, the status map."""
        if self._analytics is None:
            from devportal.settings.config import resolve_analytics  # deferred: dlt (startup)

            self._analytics = resolve_analytics()
        return self._analytics

    def alerts(self) -> AlertsConfig:
        """`[alerts]`: where alerts go and when they are due."""
        if self._alerts is None:
            from devportal.settings.alerts import resolve_alerts  # deferred: dlt (startup)

            self._alerts = resolve_alerts()
        return self._alerts
