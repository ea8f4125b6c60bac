"""`[alerts]`: where alerts go and when they are due, one dlt configspec resolved by dlt.

dlt looks each field up in the environment (`ALERTS__<FIELD>`), `.dlt/secrets.toml` and
`.dlt/config.toml`. `webhook_url` is a secret (a Slack or Discord incoming webhook's URL is its
credential: whoever has it may post), so dlt reads it from secrets.toml or the environment only;
dlt's own `[runtime] slack_incoming_hook` is honoured beside it (`hooks`). Both URLs are
registered with the scrub (`errors.register_secret`): no log line or message shows them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from dlt.common.configuration import configspec
from dlt.common.configuration.exceptions import (
    ConfigurationException,
    ConfigValueCannotBeCoercedException,
    ValueNotSecretException,
)
from dlt.common.configuration.resolve import resolve_configuration
from dlt.common.configuration.specs import BaseConfiguration, RuntimeConfiguration
from dlt.common.typing import TSecretStrValue

from devportal.base.errors import ConfigError, register_secret

SECTIONS = ("alerts",)
# a daily cron's sync, plus two hours of slack for a slow run or a late start
DEFAULT_MAX_AGE_HOURS = 26.0


@configspec
class AlertsConfig(BaseConfiguration):
    """`[alerts]` in .dlt/config.toml (`webhook_url` in .dlt/secrets.toml), or `ALERTS__<KEY>`.

    `webhook_url`: a Slack or Discord incoming webhook (or anything taking the same JSON); unset,
    and without dlt's `[runtime] slack_incoming_hook`, nothing is posted. `max_age_hours`: data
    older than this is stale for `devportal status`. `churn_rate_above`: post when the last full
    month's churn rate (a share: 0.05 is 5%) is above it. `churn_spike_factor`: post when it is
    above this many times the average of the three full months before it. `timeout_s`: how long
    one post may take, connecting included (a webhook that hangs never holds up a sync).
    """

    webhook_url: TSecretStrValue | None = None
    max_age_hours: float = DEFAULT_MAX_AGE_HOURS
    churn_rate_above: float | None = None
    churn_spike_factor: float | None = None
    timeout_s: float = 10.0


class AlertsConfigError(ConfigError):
    """An `[alerts]` setting that cannot be used: one line naming the key (never the URL). A
    command refuses it before its first request (`devportal sync`); nothing can be posted."""


def resolve_alerts() -> AlertsConfig:
    """`[alerts]` from env/secrets/config; a bad value is one line naming the key (never the
    webhook's URL), and the URLs alerts post to are registered as secrets."""

    try:
        cfg = resolve_configuration(AlertsConfig(), sections=SECTIONS)
    except ValueNotSecretException:
        # the URL is a credential: dlt refuses it in config.toml, which is often committed
        raise AlertsConfigError(
            "[alerts] webhook_url is a secret (whoever has the URL may post): move it from "
            ".dlt/config.toml to .dlt/secrets.toml, or set ALERTS__WEBHOOK_URL"
        ) from None
    except ConfigValueCannotBeCoercedException as err:
        # from None: the cause quotes the value, which may be the webhook's URL
        shown = "the value given" if err.field_name == "webhook_url" else repr(err.field_value)
        raise AlertsConfigError(
            f"configuration [alerts] {err.field_name} = {shown} is not a number: fix it in "
            f".dlt/config.toml or ALERTS__{err.field_name.upper()}"
        ) from None
    check(cfg)
    if cfg.webhook_url:
        secret_url(str(cfg.webhook_url))
    return cfg


def check(cfg: AlertsConfig) -> None:
    """The ranges that make sense; one line naming the key otherwise."""

    def bad(key: str, value: Any, why: str) -> ConfigError:
        return AlertsConfigError(
            f"configuration [alerts] {key} = {value!r} {why}: fix it in .dlt/config.toml or "
            f"ALERTS__{key.upper()}"
        )

    if cfg.max_age_hours < 0:
        raise bad("max_age_hours", cfg.max_age_hours, "must be 0 or more")
    if cfg.timeout_s <= 0:
        raise bad("timeout_s", cfg.timeout_s, "must be above 0")
    rate = cfg.churn_rate_above
    if rate is not None and not 0 < rate < 1:
        raise bad("churn_rate_above", rate, "is a share between 0 and 1 (0.05 is 5%)")
    factor = cfg.churn_spike_factor
    if factor is not None and factor <= 0:
        raise bad("churn_spike_factor", factor, "must be above 0 (2.0: twice the average)")
    if cfg.webhook_url and not _is_http(str(cfg.webhook_url)):
        raise AlertsConfigError(
            "configuration [alerts] webhook_url is not an http(s) URL: set the incoming "
            "webhook's URL in .dlt/secrets.toml [alerts] or ALERTS__WEBHOOK_URL"
        )


def dlt_slack_hook() -> str | None:
    """dlt's own `[runtime] slack_incoming_hook`, as dlt resolves it (its pseudo-secret
    decoding included); None when unset or unreadable (it is dlt's setting, not ours to
    refuse)."""

    try:
        hook = resolve_configuration(RuntimeConfiguration()).slack_incoming_hook
    except ConfigurationException:
        return None
    if not hook or not _is_http(str(hook)):
        return None
    secret_url(str(hook))
    return str(hook)


def hooks(cfg: AlertsConfig) -> list[str]:
    """The URLs an alert is posted to: `[alerts] webhook_url` and dlt's `[runtime]
    slack_incoming_hook`, each once."""
    found = [str(cfg.webhook_url)] if cfg.webhook_url else []
    slack = dlt_slack_hook()
    if slack and slack not in found:
        found.append(slack)
    return found


def secret_url(url: str) -> None:
    """URL and its path (a failed request names only the path) are secrets from now on."""
    register_secret(url)
    parts = urlsplit(url)
    register_secret(parts.path + (f"?{parts.query}" if parts.query else ""))


def _is_http(url: str) -> bool:
    parts = urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.netloc)
