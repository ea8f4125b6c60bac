"""Every setting devportal reads, resolved by dlt's providers and checked with one-line errors.

Each module reads one section with dlt's providers and says what is wrong in one line.

One job per module, imports running one way (each only from those above it):

    files       where dlt reads settings from (the project's `.dlt/`, dlt's global folder, the
                environment); a broken settings file placed
    http        `HttpSettings`: the HTTP fields (names, types, defaults) defined once; base URL
                and token checks
    alerts      `[alerts]`: webhook_url, churn thresholds, max_age_hours; dlt's `[runtime]
                slack_incoming_hook`
    config      `[sources.devportal]`: `DevportalConfig` (inherits `HttpSettings`), `resolve()`,
                the unknown-key check; `[analytics]`
    currencies  the ISO 4217 codes a price book may name (a checked-in list, its source named)
    prices      the price book: flat keys or `prices_file` (CSV or TOML) validated into the
                `prices` and `price_book` seeds
    command     `CommandSettings`: one command's settings, each section resolved once, carried
                by its `Target`
"""
