-- month_spine: the calendar months the monthly marts are counted in, one spine for all of them.
--
-- Grain: one row per calendar month (`month_start`, its first instant) from the earliest month
-- any monthly mart needs to the month of as_of; no rows before the first sync (no as_of).
-- Months at their boundary: an instant counts in the month it ends or falls in, so a month
-- holds the instants after its first up to its end (month_start, month_end]: an as_of exactly
-- at a month's first instant (a sync at 00:00:00 on the 1st) ends the month before, which is
-- then complete, and opens no month (its sync saw what happened before it); its figures are
-- the month before's end (daily_subscribers: a sync at midnight ends the day before). The
-- first sync opens its month instead: the history starts there (as daily_subscribers' first
-- day), so the month of as_of is never before the first sync's month.
-- The earliest month is the first of: the first sync's month (reactivations, cohort_retention),
-- the month of the earliest live event (subscription_events.event_month; monthly_churn: an
-- expiry observed before the first sync), the month of the earliest live due date up to the
-- end of as_of's month (monthly_renewals: every `expires_at` the history recorded, in the month
-- it ends, as an expiry). Each mart keeps the months from its own start on, and says in its
-- header why it starts there.
-- `month_end`: the first instant of the next month.
-- `is_complete`: the month ended at or before as_of (the as_of month is still running, unless
--   as_of is exactly its end).
-- `is_before_first_sync`: the month started before the first sync (as_of.first_sync_at), so
--   what the marts count in it rests on what the first sync listed (their `is_estimate`).
--
-- @test unique(month_start)
-- @test not_null(month_start, month_end, is_complete)

with clock as (
    select
        as_of,
        first_sync_at,
        date_trunc('month', first_sync_at) as first_sync_month,
        -- as_of at a month's first instant ends the month before (never the first sync's)
        greatest(
            date_trunc('month', first_sync_at),
            date_trunc('month', as_of - interval 1 microsecond)
        ) as last_month
    from analytics.as_of
),

starts as (
    select clock.first_sync_month as month_start
    from clock
    union all
    select min(event_month) as month_start
    from analytics.subscription_events
    union all
    select date_trunc('month', min(versions.expires_at) - interval 1 microsecond) as month_start
    from analytics.subscription_versions as versions
    where
        not versions.is_test
        -- one bound for all versions (PostgreSQL would add the month again for every row)
        and versions.expires_at <= (select clock.last_month + interval 1 month from clock)
),

month_range as (
    select
        (select min(starts.month_start) from starts) as first_month,
        clock.last_month
    from clock
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
    cross join clock
)

select * from final
order by month_start
