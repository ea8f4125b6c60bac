-- monthly_churn_bases_are_month_start_subscribers: ties analytics.monthly_churn's
-- `subscribers_at_start` to analytics.month_start_subscribers.
--
-- Expects: each month's base is the number of month_start_subscribers rows of its month (the
--   mart counts them by the same rule from the spells and first versions, without reading
--   them: one row per month and subscription is 1.6 million at 100k subscriptions), 0 where
--   there are none.
-- Returns: the months where the two differ, with both.

with bases as (
    select month_start::date as month, count(*) as subscribers
    from analytics.month_start_subscribers
    group by month_start::date
)
select churn.month, churn.subscribers_at_start, coalesce(bases.subscribers, 0) as rows_of_month
from analytics.monthly_churn as churn
left join bases on bases.month = churn.month
where churn.subscribers_at_start <> coalesce(bases.subscribers, 0)
