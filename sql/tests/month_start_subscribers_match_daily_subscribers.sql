-- month_start_subscribers_match_daily_subscribers: ties analytics.month_start_subscribers (the
-- bases of monthly_churn and churn_by_platform) to analytics.daily_subscribers.
--
-- Expects: every month of analytics.month_spine starting after the first sync has a
--   daily_subscribers day measured at its first instant (the month before's last day), and its
--   subscribers at start are that day's usable: the monthly bases count a subscription from
--   the same first paid instant as the daily series (a start between two syncs included), and
--   not during a lapse.
-- Returns: the months where that does not hold, with both counts.

with clock as (
    select first_sync_at from analytics.as_of
),
bases as (
    -- each stretch counts at every month start it holds
    select spine.month_start, count(*) as subscribers
    from analytics.month_start_subscribers as stretches
    inner join analytics.month_spine as spine
        on spine.month_start >= stretches.first_month_start
        and spine.month_start <= stretches.last_month_start
    where not stretches.is_estimate
    group by spine.month_start
)
select spine.month_start, coalesce(bases.subscribers, 0) as subscribers_at_start,
       daily.usable as daily_usable
from analytics.month_spine as spine
cross join clock
left join bases on bases.month_start = spine.month_start
left join analytics.daily_subscribers as daily on daily.snapshot_at = spine.month_start
where spine.month_start > clock.first_sync_at
    and (daily.usable is null or daily.usable <> coalesce(bases.subscribers, 0))
