-- cohort_retention_month_ends_match_monthly_churn_bases: ties the complete months of
-- analytics.cohort_retention to analytics.monthly_churn.
--
-- Expects: usable at a month's end (summed over the cohorts) is usable at the next month's start
--   (`subscribers_at_start` of monthly_churn), and monthly_churn has that next month, unless
--   the month ended at as_of exactly (a sync at 00:00:00 on the 1st opens no month; that end
--   is as_of, which cohort_retention_at_as_of_matches_subscriptions_current checks).
-- Returns: the months where that does not hold, with both counts.

with month_ends as (
    select month, measured_at, sum(usable) as usable
    from analytics.cohort_retention where is_complete
    group by month, measured_at
)
select month_ends.month, month_ends.usable, churn.subscribers_at_start
from month_ends
cross join analytics.as_of as clock
left join analytics.monthly_churn as churn
    on churn.month = month_ends.month + interval 1 month
where (churn.month is null and month_ends.measured_at < clock.as_of)
    or month_ends.usable <> churn.subscribers_at_start
