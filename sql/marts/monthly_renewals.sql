-- monthly_renewals: per month, the live subscriptions that came due, and what became of them.
--
-- Grain: one row per (month, period): every calendar month (`month`, its first day) from the
-- first month with a due date (month_spine from there: a due date before the first sync is
-- still one the history recorded) to the month of as_of, times `period` in all, monthly, yearly,
-- unknown (the subscription's period in billing_periods; 'all' is every period). Rows with
-- nothing due are there, with zeros. A period is known only from a renewal the history shows,
-- so 'unknown' gathers the subscriptions that never renewed while watched (mostly churn) and
-- the monthly and yearly rows are biased towards renewing; 'all' has no such bias.
-- A due date is a distinct (subscription, `expires_at`) of the live history: every expiry a
-- sync recorded, the use the subscription had paid for up to then. An expiry between two syncs
-- that a renewal had already moved on before the next sync saw it is not in the history, so
-- sparse syncs see fewer due dates (billing_periods tells how many months a step spans).
-- `came_due`: due dates falling in the month (after as_of too, within its month); a due date
--   exactly at 00:00:00 on the 1st ends the month before (the paid use lasted through it), as
--   its expiry does in monthly_churn (subscription_events.event_month).
-- `churned`: the due date is one of the subscription's `expired` events (subscription_events:
--   a lapse, a canceled version with this expiry, <= as_of, that is its latest or was followed
--   by a win-back); so the `churned` of period 'all' equals monthly_churn.churned of the month.
--   A lapse later won back churned at this due date (its comeback is a win-back, counted in
--   reactivations, not a renewal), as in monthly_churn and mrr_movements.
-- `renewed`: not churned, and a version seen after the one that first carried the due date has
--   a later `expires_at` (a renewal, or a save: reactivated before the expiry, or seen late with
--   the new paid period running on from this one).
-- `undecided`: neither, as of as_of: not yet due, or due but no later expiry seen yet (the
--   next sync tells), or the API stopped listing the subscription (subscriptions_current
--   .is_removed) before a renewal was seen. renewed + churned + undecided = came_due.
-- `renewal_rate`: renewed / (renewed + churned), undecided ones left out; NULL when both are
--   0, and in `is_estimate` months.
-- `is_estimate`: the month started before the first sync (as in monthly_churn). Of its due
--   dates before the first sync, the history holds only those the first sync still listed:
--   mostly expiries that ended in churn; the ones renewed before the history began are unseen.
--   So `renewed` is a lower bound there and no renewal rate is given.
-- `is_complete`: the month ended at or before as_of.
--
-- @test unique(month, period)
-- @test not_null(month, period, came_due, renewed, churned, undecided, is_estimate, is_complete)
-- @test accepted_values(period: all, monthly, yearly, unknown)

with live_versions as (
    -- `later_expires_at`: the latest `expires_at` of the versions seen after this one
    -- (valid_from is never NULL; `nulls first` is the null order every engine can spell in a
    -- window aggregate)
    select
        id,
        expires_at,
        valid_from,
        max(expires_at) over (
            partition by id order by valid_from nulls first
            rows between 1 following and unbounded following
        ) as later_expires_at
    from analytics.subscription_versions
    where not is_test and expires_at is not null
),

due_dates as (
    -- `is_extended`: a version seen after the one that first carried the due date has a later
    -- `expires_at` (the versions seen after the first are a superset of those seen after any
    -- later one carrying it, so the group's greatest `later_expires_at` is the first's)
    select
        id,
        expires_at,
        coalesce(max(later_expires_at) > expires_at, false) as is_extended
    from live_versions
    group by id, expires_at
),

expiries as (
    select
        subscription_id,
        expires_at
    from analytics.subscription_events
    where event_type = 'expired'
),

outcomes as (
    select
        date_trunc('month', due_dates.expires_at - interval 1 microsecond) as month_start,
        coalesce(periods.period, 'unknown') as period,
        case
            when expiries.subscription_id is not null then 'churned'
            when due_dates.is_extended then 'renewed'
            else 'undecided'
        end as outcome
    from due_dates
    left join expiries
        on expiries.subscription_id = due_dates.id
        and expiries.expires_at = due_dates.expires_at
    left join analytics.billing_periods as periods on periods.subscription_id = due_dates.id
    -- up to the end of as_of's month (month_spine's last)
    where due_dates.expires_at <= (select max(spine.month_end) from analytics.month_spine as spine)
),

counts_by_period as (
    select
        month_start,
        period,
        count(*) as came_due,
        count(*) filter (where outcome = 'renewed') as renewed,
        count(*) filter (where outcome = 'churned') as churned,
        count(*) filter (where outcome = 'undecided') as undecided
    from outcomes
    group by month_start, period
),

months as (
    -- from the first month with a due date
    select *
    from analytics.month_spine
    where month_start >= (select min(counts_by_period.month_start) from counts_by_period)
),

period_names as (
    select 'all' as period
    union all
    select 'monthly' as period
    union all
    select 'yearly' as period
    union all
    select 'unknown' as period
),

counts as (
    -- 'all': the periods' counts added up (a few rows), not every due date counted again
    select *
    from counts_by_period
    union all
    select
        month_start,
        'all' as period,
        cast(sum(came_due) as bigint) as came_due,
        cast(sum(renewed) as bigint) as renewed,
        cast(sum(churned) as bigint) as churned,
        cast(sum(undecided) as bigint) as undecided
    from counts_by_period
    group by month_start
),

final as (
    select
        months.month_start::date as month,
        period_names.period,
        coalesce(counts.came_due, 0) as came_due,
        coalesce(counts.renewed, 0) as renewed,
        coalesce(counts.churned, 0) as churned,
        coalesce(counts.undecided, 0) as undecided,
        case
            when months.month_start >= clock.first_sync_at
                then counts.renewed / nullif(counts.renewed + counts.churned, 0)
        end as renewal_rate,
        months.is_before_first_sync as is_estimate,
        months.is_complete
    from months
    cross join period_names
    cross join analytics.as_of as clock
    left join counts
        on counts.month_start = months.month_start
        and counts.period = period_names.period
)

select * from final
order by month, period
