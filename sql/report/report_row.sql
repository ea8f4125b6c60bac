-- report_row: the one row of figures `devportal report` formats (text, JSON, CSV, Markdown, HTML),
-- one column per figure key. The figures are computed by the model
-- sql/marts/report_figures.sql; the report only reads its row, with what it needs beside it to
-- say which figures the history cannot measure yet and how the page's tiles changed against
-- the month before:
-- `first_sync_at`: as in as_of (a figure seen between two syncs needs a sync after it).
-- `survival_curve_days`: the rows of survival_curve (none while no subscription first seen
--   after the first sync has been followed).
-- `usable_month_before`: daily_subscribers' usable on the last day of the month before the
--   month of as_of (NULL when that day is before the first sync); an as_of at 00:00:00 on the
--   1st ends the month before, which is then as_of's month (as report_figures'
--   `mrr_month_before`).
-- `month_before_last_churn_rate`, `month_before_last_is_estimate`: monthly_churn of the month
--   before `last_full_month`; `month_before_last_renewal_rate`: monthly_renewals (period all)
--   of that month (NULL in estimated months). NULL when there is no such month.
select
    figures.*,
    clock.first_sync_at,
    (select count(*) from analytics.survival_curve) as survival_curve_days,
    daily.usable as usable_month_before,
    churn_before.churn_rate as month_before_last_churn_rate,
    churn_before.is_estimate as month_before_last_is_estimate,
    renewals_before.renewal_rate as month_before_last_renewal_rate
from analytics.report_figures as figures
cross join analytics.as_of as clock
left join analytics.daily_subscribers as daily
    on daily.day = cast(
        date_trunc('month', clock.as_of - interval '1 microsecond') - interval '1 day' as date
    )
left join analytics.monthly_churn as churn_before
    on churn_before.month = cast(figures.last_full_month - interval '1 month' as date)
left join analytics.monthly_renewals as renewals_before
    on
        renewals_before.month = cast(figures.last_full_month - interval '1 month' as date)
        and renewals_before.period = 'all'
