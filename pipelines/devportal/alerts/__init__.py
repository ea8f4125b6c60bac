"""Alerts: what devportal posts to a team's chat when it has something to say, and the record
of failed runs that `devportal status` reads.

One job per module, imports running one way (settings <- webhook <- churn <- events):

    settings  `[alerts]` (`AlertsConfig`, a dlt configspec) and dlt's `[runtime] slack_incoming_hook`
    webhook   the JSON Slack and Discord both accept, posted with a timeout; a failure is a warning
    churn     the last full month's churn against `churn_rate_above` / `churn_spike_factor`
    events    a failed run, churn after a build, stale data, the digest: recorded and posted

Nothing here ever fails the command it reports on: a webhook that fails, or `[alerts]` settings
that cannot be read, are one warning line on stderr. This package's `__init__` imports nothing,
so `devportal.alerts.settings` stays as light as `devportal.config`, which reads it.
"""
