-- monthly_churn: churn per calendar month, live subscriptions.
--
-- Grain: one row per calendar month (`month`, its first day) from the earliest month with data
-- (the first sync, or an earlier observed expiry) to the month of as_of.
-- `churned`: canceled subscriptions whose `expires_at` falls in the month and is <= as_of (the
--   `expired` events of the month, backfill included: an expiry date is a fact even when the
--   sync learned it later).
-- `churned_monthly`, `churned_yearly`, `churned_unknown`: `churned` split by the subscription's
--   period in billing_periods (inferred from its whole history up to as_of); they sum to it.
-- `cancellations`, `new`: `canceled` / `new` events observed in the month, backfill excluded;
--   NULL for months that ended before the first sync (nothing was observed then, which is not 0).
-- `subscribers_at_start`: live subscriptions usable at the first instant of the month.
-- `churn_rate`: churned / subscribers_at_start (NULL when there were none).
-- `is_complete`: the month ended at or before as_of (the as_of month is still running).
-- `is_estimate`: the month started before the first sync, so `subscribers_at_start` is an
--   estimate. The API gives no creation date; the estimate counts the subscriptions the first
--   sync listed whose `expires_at` (as then listed) was after the month start, i.e. it assumes
--   every one of them already existed. It is an upper bound, so the churn rate of these months
--   is a lower bound; `churned` in them is a lower bound too (subscriptions the API dropped
--   before the first sync are not seen at all).
--
-- @test unique(month)
-- @test not_null(month, churned, subscribers_at_start, is_estimate, is_complete)
-- @test not_null(churned_monthly, churned_yearly, churned_unknown)

with clock as (
    select
        as_of,
        first_sync_at
    from analytics.as_of
),

live_versions as (
    select *
    from analytics.subscription_versions
    where not is_test
),

live_events as (
    select *
    from analytics.subscription_events
),

month_range as (
    select
        date_trunc('month', least(clock.first_sync_at, min(live_events.event_at))) as first_month,
        date_trunc('month', clock.as_of) as last_month
    from clock
    left join live_events on true
    group by clock.first_sync_at, clock.as_of
),

months as (
    select
        month_start::timestamp as month_start,
        month_start::timestamp + interval 1 month as month_end
    from month_range,
        generate_series(month_range.first_month, month_range.last_month, interval 1 month)
            as series(month_start)
),

observed_bases as (
    -- usable at the month start according to the history (months starting after the first sync)
    select
        months.month_start,
        count(live_versions.id) as subscribers
    from months
    cross join clock
    inner join live_versions
        on live_versions.valid_from <= months.month_start
        and (live_versions.valid_to is null or live_versions.valid_to > months.month_start)
        and live_versions.usable_until > months.month_start
    where months.month_start >= clock.first_sync_at
    group by months.month_start
),

estimated_bases as (
    -- before the first sync: the first sync's list, assuming it all existed at the month start
    select
        months.month_start,
        count(live_versions.id) as subscribers
    from months
    cross join clock
    inner join live_versions
        on live_versions.version_number = 1
        and live_versions.valid_from <= clock.first_sync_at
        and live_versions.expires_at > months.month_start
    where months.month_start < clock.first_sync_at
    group by months.month_start
),

monthly_events as (
    select
        date_trunc('month', live_events.event_at) as month_start,
        count(*) filter (where live_events.event_type = 'expired') as churned,
        count(*) filter (
            where live_events.event_type = 'expired' and periods.period = 'monthly'
        ) as churned_monthly,
        count(*) filter (
            where live_events.event_type = 'expired' and periods.period = 'yearly'
        ) as churned_yearly,
        count(*) filter (
            where live_events.event_type = 'expired' and periods.period = 'unknown'
        ) as churned_unknown,
        count(*) filter (
            where live_events.event_type = 'canceled' and not live_events.is_initial_load
        ) as cancellations,
        count(*) filter (
            where live_events.event_type = 'new' and not live_events.is_initial_load
        ) as new_subscriptions
    from live_events
    left join analytics.billing_periods as periods
        on periods.subscription_id = live_events.subscription_id
    group by 1
),

final as (
    select
        months.month_start::date as month,
        coalesce(monthly_events.churned, 0) as churned,
        coalesce(monthly_events.churned_monthly, 0) as churned_monthly,
        coalesce(monthly_events.churned_yearly, 0) as churned_yearly,
        coalesce(monthly_events.churned_unknown, 0) as churned_unknown,
        case
            when months.month_end > clock.first_sync_at
                then coalesce(monthly_events.cancellations, 0)
        end as cancellations,
        case
            when months.month_end > clock.first_sync_at
                then coalesce(monthly_events.new_subscriptions, 0)
        end as new,
        coalesce(observed_bases.subscribers, estimated_bases.subscribers, 0)
            as subscribers_at_start,
        coalesce(monthly_events.churned, 0)
        / nullif(coalesce(observed_bases.subscribers, estimated_bases.subscribers, 0), 0)
            as churn_rate,
        months.month_start < clock.first_sync_at as is_estimate,
        months.month_end <= clock.as_of as is_complete
    from months
    left join observed_bases using (month_start)
    left join estimated_bases using (month_start)
    left join monthly_events using (month_start)
    cross join clock
)

select * from final
order by month
