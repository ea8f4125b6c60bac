-- cohort_retention: of the live subscriptions that started in a month, how many are still
-- usable at the end of each later month.
--
-- Grain: one row per (cohort, month_offset).
-- `cohort`: the month a live subscription started ('YYYY-MM'): the `event_month` of its `new`
--   event (subscription_events), so a cohort is monthly_churn's `new` of that month. The API has
--   no creation date: a subscription first seen by a sync after the first one started at its
--   estimated first paid instant (subscription_spells, docs/analytics.md "Starts between
--   syncs"), within (the sync before, the sync that saw it], as daily_subscribers and the
--   monthly bases count it; a start at 00:00:00 on the 1st joins the month before's cohort,
--   which it is measured at the end of (that instant), as its `new` event counts in that month.
--   The subscriptions the first sync listed (`new` with is_initial_load) started at unknown
--   times before it: they form the cohort 'backfill' (`is_backfill`), whose `cohort_month` is
--   the first sync's month (the month it opens, as in month_spine).
-- `cohort_month`: the cohort's month (first day); `month_offset`: 0 for it, 1 for the next...;
--   `month`: the calendar month measured (first day). Only observed months: from the cohort
--   month to the month of as_of (the months of month_spine from the cohort's on), nothing
--   extrapolated.
-- `cohort_size`: the cohort's subscriptions.
-- `usable`: those usable at the end of `month` (the first instant of the next month), or at
--   as_of for the month of as_of (month_spine's last; `is_complete` false unless as_of is
--   exactly its end). Usable at an instant t: within one of its subscription_spells
--   (spell_start <= t < spell_end), as in monthly_churn's bases (month_start_subscribers) and
--   daily_subscribers. A lapse is churn (monthly_churn counts it at the expiry): a subscription
--   is not usable at a month end that falls in its lapse, and counts again once won back (at
--   its comeback): retention is the share usable then, not the share never churned (the
--   survival curve is that one). A subscription the API stopped listing has no spell after
--   that.
-- `retention`: usable / cohort_size.
--
-- @test unique(cohort, month_offset)
-- @test not_null(cohort, cohort_month, is_backfill, month_offset, month, measured_at)
-- @test not_null(cohort_size, usable, retention, is_complete)

with members as (
    -- every live subscription has one `new` event (its first version)
    select
        events.subscription_id as id,
        events.is_initial_load as is_backfill,
        case
            when events.is_initial_load then date_trunc('month', clock.first_sync_at)
            else events.event_month
        end as cohort_start
    from analytics.subscription_events as events
    cross join analytics.as_of as clock
    where events.event_type = 'new'
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

measure_points as (
    -- the instants the cohorts are measured at (one per month from the first cohort's on)
    select distinct
        month_start,
        measured_at
    from cohort_months
),

usable_counts as (
    -- the spells usable at a measured instant first (few instants), then their members'
    -- cohorts measured that month
    select
        members.is_backfill,
        members.cohort_start,
        points.month_start,
        count(*) as usable
    from analytics.subscription_spells as spells
    inner join measure_points as points
        on spells.spell_start <= points.measured_at
        and spells.spell_end > points.measured_at
    inner join members
        on members.id = spells.subscription_id
        and members.cohort_start <= points.month_start
    group by members.is_backfill, members.cohort_start, points.month_start
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
