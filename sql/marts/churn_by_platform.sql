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
--   (the bases are month_start_bases', which monthly_churn sums over the platforms;
--   sql/tests/churn_by_platform_adds_up_to_monthly_churn holds the two counts equal).
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
    left join analytics.month_start_bases as base_counts
        on base_counts.month_start = months.month_start
        and base_counts.platform = platform_names.platform
    left join churn_counts
        on churn_counts.month_start = months.month_start
        and churn_counts.platform = platform_names.platform
)

select * from final
order by month, platform
