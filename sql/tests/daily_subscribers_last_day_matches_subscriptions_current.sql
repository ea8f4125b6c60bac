-- daily_subscribers_last_day_matches_subscriptions_current: ties the last day of
-- analytics.daily_subscribers to analytics.subscriptions_current.
--
-- Expects: the last day's usable, active, canceled-but-usable and other-but-usable counts are the
--   current table's counts of live subscriptions.
-- Returns: the last day's counts when they differ.

with last_day as (
    select usable, active, canceled_usable, other_usable
    from analytics.daily_subscribers
    order by day desc limit 1
),
now_counts as (
    select count(*) filter (where is_usable) as usable,
           count(*) filter (where is_usable and status_sent = 'active') as active,
           count(*) filter (where is_usable and status_sent = 'canceled')
               as canceled_usable,
           count(*) filter (
               where is_usable
                 and (status_sent is null or status_sent not in ('active', 'canceled'))
           ) as other_usable
    from analytics.subscriptions_current where not is_test
)
select * from last_day
except
select * from now_counts
