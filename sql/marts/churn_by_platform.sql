-- churn_by_platform: monthly_churn by the subscriber's primary streaming platform.
--
-- Grain: one row per (month, platform): the months of monthly_churn, times every platform of a
-- live subscription's subscriber (rows with nothing in them are there, with zeros).
-- `platform`: users.primary_platform of the subscription's `service_id` (the accounts
--   endpoint's primary profile, as last fetched: a subscriber who moved platform counts under
--   the new one in every month); 'unknown' when the account is missing (404), not fetched yet,
--   or the subscription has no service id.
-- `subscribers_at_start`, `churned`, `churn_rate`, `is_estimate`, `is_complete`: as in
--   monthly_churn (a lapse, its `expired` event, in the month of
--   subscription_events.event_month, whether or not it was won back later), counted per
--   platform, so they sum over the platforms to monthly_churn's
--   (the bases are month_start_subscribers' rule: observed from the history from the first
--   sync on, estimated from the first sync's list before it; counted here from the spells and
--   first versions grouped by the months they start and end in, not from its rows, one per
--   month and subscription: 1.6 million at 100k subscriptions, which a join per platform
--   made the slowest model on PostgreSQL; sql/tests/churn_by_platform_adds_up_to_monthly_churn
--   holds the two counts equal).
--
-- @test unique(month, platform)
-- @test not_null(month, platform, subscribers_at_start, churned, is_estimate, is_complete)

with platforms_of as not materialized (
    select
        current_subscriptions.id,
        coalesce(users.primary_platform, 'unknown') as platform
    from analytics.subscriptions_current as current_subscriptions
    left join analytics.users on users.user_id = current_subscriptions.service_id
    where not current_subscriptions.is_test
),

platform_names as (
    select distinct platform
    from platforms_of
),

months as (
    select
        month::timestamp as month_start,
        is_estimate,
        is_complete
    from analytics.monthly_churn
),

-- month_start_subscribers' rule: a spell counts at a month start within it (spell_start <= it <
-- spell_end) from the first sync on, a first version the first sync listed at a month start
-- before it while its use had not ended (use_ends_at > it). Each is grouped by the last month
-- start before its start and before its end (`date_trunc('month', t - 1 microsecond)`: t <= m
-- exactly when that month is before m, t > m when it is m or later), so the bases are a sum
-- over a few groups per month instead of one row per month and subscription
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

base_counts as (
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
),

churn_counts as (
    select
        events.event_month as month_start,
        platforms_of.platform,
        count(*) as churned
    from analytics.subscription_events as events
    inner join platforms_of on platforms_of.id = events.subscription_id
    where events.event_type = 'expired'
    group by events.event_month, platforms_of.platform
),

final as (
    select
        months.month_start::date as month,
        platform_names.platform,
        coalesce(base_counts.subscribers, 0) as subscribers_at_start,
        coalesce(churn_counts.churned, 0) as churned,
        coalesce(churn_counts.churned, 0) / nullif(coalesce(base_counts.subscribers, 0), 0)
            as churn_rate,
        months.is_estimate,
        months.is_complete
    from months
    cross join platform_names
    left join base_counts
        on base_counts.month_start = months.month_start
        and base_counts.platform = platform_names.platform
    left join churn_counts
        on churn_counts.month_start = months.month_start
        and churn_counts.platform = platform_names.platform
)

select * from final
order by month, platform
