-- monthly_churn_months_are_contiguous_up_to_as_of: ties the months of analytics.monthly_churn to
-- analytics.as_of.
--
-- Expects: one row per month with no gap, the last being the month of as_of: the month as_of
--   falls in, or ends (a sync at 00:00:00 on the 1st ends the month before), never before the
--   first sync's month.
-- Returns: the number of months, the first and the last when that does not hold.

select
    count(*) as months,
    min(month) as first_month,
    max(month) as last_month
from analytics.monthly_churn cross join analytics.as_of as clock
having count(*) <> date_diff('month', min(month), max(month)) + 1
    or max(month) <> max(
        greatest(
            date_trunc('month', clock.as_of - interval 1 microsecond),
            date_trunc('month', clock.first_sync_at)
        )
    )::date
