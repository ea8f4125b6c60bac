-- month_spine: the calendar months the monthly marts are counted in, one spine for all of them.
--
-- Grain: one row per calendar month (`month_start`, its first instant) from the earliest month
-- any monthly mart needs to the month of as_of; no rows before the first sync (no as_of).
-- The earliest month is the first of: the first sync's month (reactivations, cohort_retention),
-- the month of the earliest live event (monthly_churn: an expiry observed before the first
-- sync), the month of the earliest live due date before the end of as_of's month
-- (monthly_renewals: every `expires_at` the history recorded). Each mart keeps the months from
-- its own start on, and says in its header why it starts there.
-- `month_end`: the first instant of the next month.
-- `is_complete`: the month ended at or before as_of (the as_of month is still running).
-- `is_before_first_sync`: the month started before the first sync (as_of.first_sync_at), so
--   what the marts count in it rests on what the first sync listed (their `is_estimate`).
--
-- @test unique(month_start)
-- @test not_null(month_start, month_end, is_complete)

with starts as (
    select date_trunc('month', clock.first_sync_at) as month_start
    from analytics.as_of as clock
    union all
    select date_trunc('month', min(event_at)) as month_start
    from analytics.subscription_events
    union all
    select date_trunc('month', min(versions.expires_at)) as month_start
    from analytics.subscription_versions as versions
    cross join analytics.as_of as clock
    where
        not versions.is_test
        and versions.expires_at < date_trunc('month', clock.as_of) + interval 1 month
),

month_range as (
    select
        (select min(starts.month_start) from starts) as first_month,
        date_trunc('month', clock.as_of) as last_month
    from analytics.as_of as clock
),

months as (
    select series.month_start::timestamp as month_start
    from month_range,
        generate_series(month_range.first_month, month_range.last_month, interval 1 month)
            as series(month_start)
),

final as (
    select
        months.month_start,
        months.month_start + interval 1 month as month_end,
        months.month_start + interval 1 month <= clock.as_of as is_complete,
        months.month_start < clock.first_sync_at as is_before_first_sync
    from months
    cross join analytics.as_of as clock
)

select * from final
order by month_start
