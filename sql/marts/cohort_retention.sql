-- cohort_retention: of the live subscriptions first seen in a month, how many are still usable
-- at the end of each later month.
--
-- Grain: one row per (cohort, month_offset).
-- `cohort`: the month a live subscription was first seen (subscriptions_current.first_seen_at,
--   'YYYY-MM'); the API has no creation date, so first seen is the nearest start there is. A
--   sync at 00:00:00 on the 1st saw what started before it: those subscriptions join the month
--   before's cohort, which it measures at that month's end (the instant of that sync), as
--   their `new` events count in that month (subscription_events.event_month).
--   The subscriptions the first sync listed (first_seen_at <= as_of.first_sync_at) started at
--   unknown times before it: they form the cohort 'backfill' (`is_backfill`), whose
--   `cohort_month` is the first sync's month (the month it opens, as in month_spine).
-- `cohort_month`: the cohort's month (first day); `month_offset`: 0 for it, 1 for the next...;
--   `month`: the calendar month measured (first day). Only observed months: from the cohort
--   month to the month of as_of (the months of month_spine from the cohort's on), nothing
--   extrapolated.
-- `cohort_size`: the cohort's subscriptions.
-- `usable`: those usable at the end of `month` (the first instant of the next month), or at
--   as_of for the month of as_of (month_spine's last; `is_complete` false unless as_of is
--   exactly its end). Usable at an instant t:
--   the version valid at t (valid_from <= t < valid_to, or still current) has `usable_until` > t
--   (see subscription_versions), as in monthly_churn's bases and daily_subscribers; a
--   subscription the API stopped listing has no version valid after that.
-- `retention`: usable / cohort_size.
--
-- @test unique(cohort, month_offset)
-- @test not_null(cohort, cohort_month, is_backfill, month_offset, month, measured_at)
-- @test not_null(cohort_size, usable, retention, is_complete)

with members as (
    select
        current_subscriptions.id,
        current_subscriptions.first_seen_at <= clock.first_sync_at as is_backfill,
        case
            when current_subscriptions.first_seen_at <= clock.first_sync_at
                then date_trunc('month', clock.first_sync_at)
            -- first seen at a month's first instant: seen at the month before's end
            else date_trunc('month', current_subscriptions.first_seen_at - interval 1 microsecond)
        end as cohort_start
    from analytics.subscriptions_current as current_subscriptions
    cross join analytics.as_of as clock
    where not current_subscriptions.is_test
),

cohorts as (
    select
        is_backfill,
        cohort_start,
        count(*) as cohort_size
    from members
    group by is_backfill, cohort_start
),

cohort_months as (
    select
        cohorts.is_backfill,
        cohorts.cohort_start,
        cohorts.cohort_size,
        spine.month_start,
        least(spine.month_end, clock.as_of) as measured_at,
        spine.is_complete
    from cohorts
    inner join analytics.month_spine as spine on spine.month_start >= cohorts.cohort_start
    cross join analytics.as_of as clock
),

usable_counts as (
    select
        cohort_months.is_backfill,
        cohort_months.cohort_start,
        cohort_months.month_start,
        count(*) as usable
    from cohort_months
    inner join members
        on members.is_backfill = cohort_months.is_backfill
        and members.cohort_start = cohort_months.cohort_start
    inner join analytics.subscription_versions as versions
        on versions.id = members.id
        and not versions.is_test
        and versions.valid_from <= cohort_months.measured_at
        and (versions.valid_to is null or versions.valid_to > cohort_months.measured_at)
        and versions.usable_until > cohort_months.measured_at
    group by cohort_months.is_backfill, cohort_months.cohort_start, cohort_months.month_start
),

final as (
    select
        case
            when cohort_months.is_backfill then 'backfill'
            else strftime(cohort_months.cohort_start, '%Y-%m')
        end as cohort,
        cohort_months.cohort_start::date as cohort_month,
        cohort_months.is_backfill,
        date_diff('month', cohort_months.cohort_start, cohort_months.month_start) as month_offset,
        cohort_months.month_start::date as month,
        cohort_months.measured_at,
        cohort_months.cohort_size,
        coalesce(usable_counts.usable, 0) as usable,
        coalesce(usable_counts.usable, 0) / cohort_months.cohort_size as retention,
        cohort_months.is_complete
    from cohort_months
    left join usable_counts
        on usable_counts.is_backfill = cohort_months.is_backfill
        and usable_counts.cohort_start = cohort_months.cohort_start
        and usable_counts.month_start = cohort_months.month_start
)

select * from final
order by cohort_month, is_backfill desc, month_offset
