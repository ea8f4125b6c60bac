-- month_start_bases: the subscribers at each month start, by platform: the bases monthly_churn
-- (summed over the platforms) and churn_by_platform divide a month's churn by.
--
-- Grain: one row per (month_start, platform) of month_spine with subscribers in it (a platform
-- with none at a month start has no row).
-- `platform`: users.primary_platform of the subscription's `service_id`, 'unknown' when the
--   account is missing, not fetched yet, or the subscription has no service id (as
--   churn_by_platform says).
-- `subscribers`: the month_start_subscribers holding the month start (first_month_start <= it <=
--   last_month_start): from the first sync on, the subscription_spells holding it; before it,
--   an estimate from the first versions the first sync listed. Its stretches (170 thousand at
--   100k subscriptions) are grouped by (platform, first_month_start, last_month_start) first,
--   so a base is a sum over a few hundred groups instead of one row per month and subscription
--   (1.6 million, which a join per platform made the slowest model on PostgreSQL), and the
--   platform join is built once instead of once for the spells and once for the versions.
--   sql/tests/monthly_churn_bases_are_month_start_subscribers holds the sums to
--   month_start_subscribers.
--
-- @test unique(month_start, platform)
-- @test not_null(month_start, platform, subscribers)

with platforms_of as not materialized (
    select
        current_subscriptions.id,
        coalesce(users.primary_platform, 'unknown') as platform
    from analytics.subscriptions_current as current_subscriptions
    left join analytics.users on users.user_id = current_subscriptions.service_id
    where not current_subscriptions.is_test
),

stretch_groups as (
    select
        platforms_of.platform,
        stretches.first_month_start,
        stretches.last_month_start,
        count(*) as subscribers
    from analytics.month_start_subscribers as stretches
    inner join platforms_of on platforms_of.id = stretches.subscription_id
    group by 1, 2, 3
),

final as (
    select
        spine.month_start,
        stretch_groups.platform,
        cast(sum(stretch_groups.subscribers) as bigint) as subscribers
    from analytics.month_spine as spine
    inner join stretch_groups
        on stretch_groups.first_month_start <= spine.month_start
        and stretch_groups.last_month_start >= spine.month_start
    group by spine.month_start, stretch_groups.platform
)

select * from final
