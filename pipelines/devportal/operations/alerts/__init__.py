"""Alerts: what devportal posts to a team's chat when it has something to say, and the record
of failed runs that `devportal status` reads.

One job per module, imports running one way (webhook <- churn, digest <- events; `[alerts]` itself is
`devportal.settings.alerts`):

    webhook   the JSON Slack and Discord both accept, posted with a timeout; a failure is a warning
    churn     the last full month's churn against `churn_rate_above` / `churn_spike_factor`
    digest    the report's headline in one line (`devportal digest`)
    events    a failed run, churn after a build, stale data, the digest: recorded and posted

Nothing here ever fails the command it reports on: a webhook that fails, or `[alerts]` settings
that cannot be read, are one warning line on stderr. This package's `__init__` imports nothing.
"""
