-- churn_by_platform: monthly_churn by the subscriber's primary streaming platform.
--
-- Grain: one row per (month, platform): the months of monthly_churn, times every platform of a
-- live subscription's subscriber (rows with nothing in them are there, with zeros).
-- `platform`: users.primary_platform of the subscription's `service_id` (the accounts
--   endpoint's primary profile, as last fetched: a subscriber who moved platform counts under
--   the new one in every month); 'unknown' when the account is missing (404), not fetched yet,
--   or the subscription has no service id.
-- `subscribers_at_start`, `churned`, `churn_rate`, `is_estimate`, `is_complete`: as in
--   monthly_churn, counted per platform, so they sum over the platforms to monthly_churn's
--   (the bases are computed the same way: observed from the history from the first sync on,
--   estimated from the first sync's list before it).
--
-- @test unique(month, platform)
-- @test not_null(month, platform, subscribers_at_start, churned, is_estimate, is_complete)

with clock as (
    select
        as_of,
        first_sync_at
    from analytics.as_of
),

platforms_of as (
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
        month::timestamp + interval 1 month as month_end
    from analytics.monthly_churn
),

live_versions as (
    select *
    from analytics.subscription_versions
    where not is_test
),

bases as (
    -- as monthly_churn's observed_bases (months from the first sync on) and estimated_bases
    -- (before it), per subscription
    select
        months.month_start,
        live_versions.id
    from months
    cross join clock
    inner join live_versions
        on live_versions.valid_from <= months.month_start
        and (live_versions.valid_to is null or live_versions.valid_to > months.month_start)
        and live_versions.usable_until > months.month_start
    where months.month_start >= clock.first_sync_at
    union all
    select
        months.month_start,
        live_versions.id
    from months
    cross join clock
    inner join live_versions
        on live_versions.version_number = 1
        and live_versions.valid_from <= clock.first_sync_at
        and live_versions.expires_at > months.month_start
    where months.month_start < clock.first_sync_at
),

base_counts as (
    select
        bases.month_start,
        platforms_of.platform,
        count(*) as subscribers
    from bases
    inner join platforms_of on platforms_of.id = bases.id
    group by bases.month_start, platforms_of.platform
),

churn_counts as (
    select
        date_trunc('month', events.event_at) as month_start,
        platforms_of.platform,
        count(*) as churned
    from analytics.subscription_events as events
    inner join platforms_of on platforms_of.id = events.subscription_id
    where events.event_type = 'expired'
    group by date_trunc('month', events.event_at), platforms_of.platform
),

final as (
    select
        months.month_start::date as month,
        platform_names.platform,
        coalesce(base_counts.subscribers, 0) as subscribers_at_start,
        coalesce(churn_counts.churned, 0) as churned,
        coalesce(churn_counts.churned, 0) / nullif(coalesce(base_counts.subscribers, 0), 0)
            as churn_rate,
        months.month_start < clock.first_sync_at as is_estimate,
        months.month_end <= clock.as_of as is_complete
    from months
    cross join platform_names
    cross join clock
    left join base_counts
        on base_counts.month_start = months.month_start
        and base_counts.platform = platform_names.platform
    left join churn_counts
        on churn_counts.month_start = months.month_start
        and churn_counts.platform = platform_names.platform
)

select * from final
order by month, platform
