-- monthly_churn_bases_are_month_start_subscribers: ties analytics.monthly_churn's
-- `subscribers_at_start` to analytics.month_start_subscribers.
--
-- Expects: each month's base is the number of month_start_subscribers stretches that hold its
--   month start (the mart counts them by the same rule from the spells and first versions,
--   without reading them), 0 where there are none.
-- Returns: the months where the two differ, with both.

with bases as (
    select spine.month_start::date as month, count(*) as subscribers
    from analytics.month_start_subscribers as stretches
    inner join analytics.month_spine as spine
        on spine.month_start >= stretches.first_month_start
        and spine.month_start <= stretches.last_month_start
    group by spine.month_start::date
)
select churn.month, churn.subscribers_at_start, coalesce(bases.subscribers, 0) as rows_of_month
from analytics.monthly_churn as churn
left join bases on bases.month = churn.month
where churn.subscribers_at_start <> coalesce(bases.subscribers, 0)
