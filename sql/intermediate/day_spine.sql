-- day_spine: the calendar days the daily marts (daily_subscribers, mrr_daily) are measured on,
-- one spine for both.
--
-- Grain: one row per calendar day (`day`) from the day of the first sync to the day of as_of;
-- no rows before the first sync (no as_of). A sync at exactly midnight ends the day before and
-- opens no new one (its sync saw what happened before it), as month_spine's months end.
-- `snapshot_at`: when the day is measured: its end (the midnight after it), or as_of for the day
--   as_of falls in (so a daily mart's last row is its figure now).
--
-- @test unique(day)
-- @test not_null(day, snapshot_at)

with clock as (
    select
        as_of,
        first_sync_at::date as first_day,
        -- a sync at exactly midnight ends the previous day, it does not open a new one
        greatest(first_sync_at::date, (as_of - interval 1 microsecond)::date) as last_day
    from analytics.as_of
),

final as (
    select
        series.day::date as day,
        least(series.day + interval 1 day, clock.as_of) as snapshot_at
    from clock,
        generate_series(clock.first_day::timestamp, clock.last_day::timestamp, interval 1 day)
            as series(day)
)

select * from final
order by day
