-- month_start_bases: the subscribers at each month start, by platform: the bases monthly_churn
-- (summed over the platforms) and churn_by_platform divide a month's churn by.
--
-- Grain: one row per (month_start, platform) of month_spine with subscribers in it (a platform
-- with none at a month start has no row).
-- `platform`: users.primary_platform of the subscription's `service_id`, 'unknown' when the
--   account is missing, not fetched yet, or the subscription has no service id (as
--   churn_by_platform says).
-- `subscribers`: month_start_subscribers' rule, counted without its rows: from the first sync
--   on, the subscription_spells holding the month start (spell_start <= it < spell_end); before
--   it, an estimate: the first versions the first sync listed whose use had not ended at the
--   month start (use_ends_at > it). Each is grouped by the last month start before its start
--   and before its end (`date_trunc('month', t - 1 microsecond)`: t <= m exactly when that month
--   is before m, t > m when it is m or later), so a base is a sum over a few groups per month
--   instead of one row per month and subscription (1.6 million at 100k subscriptions, which a
--   join per platform made the slowest model on PostgreSQL).
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

spell_groups as (
    select
        platforms_of.platform,
        date_trunc('month', spells.spell_start - interval 1 microsecond) as start_month,
        date_trunc('month', spells.spell_end - interval 1 microsecond) as end_month,
        count(*) as spells
    from analytics.subscription_spells as spells
    inner join platforms_of on platforms_of.id = spells.subscription_id
    group by 1, 2, 3
),

listed_groups as (
    select
        platforms_of.platform,
        date_trunc('month', live_versions.use_ends_at - interval 1 microsecond) as end_month,
        count(*) as versions
    from analytics.subscription_versions as live_versions
    cross join analytics.as_of as clock
    inner join platforms_of on platforms_of.id = live_versions.id
    where
        not live_versions.is_test
        and live_versions.version_number = 1
        and live_versions.valid_from <= clock.first_sync_at
        and live_versions.use_ends_at is not null
    group by 1, 2
),

final as (
    select
        spine.month_start,
        spell_groups.platform,
        cast(sum(spell_groups.spells) as bigint) as subscribers
    from analytics.month_spine as spine
    cross join analytics.as_of as clock
    inner join spell_groups
        on spell_groups.start_month < spine.month_start
        and spell_groups.end_month >= spine.month_start
    where spine.month_start >= clock.first_sync_at
    group by spine.month_start, spell_groups.platform
    union all
    select
        spine.month_start,
        listed_groups.platform,
        cast(sum(listed_groups.versions) as bigint) as subscribers
    from analytics.month_spine as spine
    cross join analytics.as_of as clock
    inner join listed_groups on listed_groups.end_month >= spine.month_start
    where spine.month_start < clock.first_sync_at
    group by spine.month_start, listed_groups.platform
)

select * from final
