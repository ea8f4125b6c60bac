-- billing_segments: each live subscription's paid periods, one per recorded expiry, with the
-- billing period each was paid for.
--
-- Grain: one row per (subscription_id, segment_end): every distinct `expires_at` a live
-- subscription's history recorded (unparsable, NULL expiries left out), ascending.
-- The API has no period field (billing_periods infers the latest one); a subscription that
-- switched from monthly to yearly billed by both in turn, so the revenue models need the period
-- per paid period: the span between two consecutive recorded expiries.
-- `segment_start`: the previous recorded expiry (NULL for the first: the use before it has no
--   known start); `segment_end`: this expiry. A time t belongs to the segment with
--   segment_start <= t < segment_end (the first: any t before its end).
-- `step_days`, `step_months`: the fit of billing_periods' header (written here once; billing_periods
--   reads it), of the step from segment_start to segment_end (NULL for the first segment, and `step_months` NULL when the step fits no
--   number of months: 28k - 2 <= days <= 31k + 4 for k = 1..11 is monthly, 350..380 days is
--   a year).
-- `period`: 'monthly' or 'yearly' when the segment's own step fits; otherwise (the first
--   segment, or a step that fits nothing, e.g. a win-back's new period counted from the day it
--   came back) the period of the nearest later fitting step, else of the nearest earlier one,
--   else 'unknown'. So the last segment's period is billing_periods.period (its most recent
--   fitting step) and a subscription seen with one expiry only is 'unknown', as there.
-- `is_last`: the subscription's latest recorded expiry.
--
-- @test unique(subscription_id, segment_end)
-- @test not_null(subscription_id, segment_end, period, is_last)
-- @test accepted_values(period: monthly, yearly, unknown)

with live_subscriptions as (
    select id
    from analytics.subscriptions_current
    where not is_test
),

expiries as (
    select distinct
        versions.id,
        versions.expires_at
    from analytics.subscription_versions as versions
    inner join live_subscriptions on live_subscriptions.id = versions.id
    where not versions.is_test and versions.expires_at is not null
),

steps as (
    select
        id,
        lag(expires_at) over (partition by id order by expires_at) as segment_start,
        expires_at as segment_end,
        row_number() over (partition by id order by expires_at) as segment_number,
        count(*) over (partition by id) as segments
    from expiries
),

month_counts as (
    select series.k
    from generate_series(1, 11) as series(k)
),

fitted as (
    select
        steps.id,
        steps.segment_start,
        steps.segment_end,
        steps.segment_number,
        steps.segments,
        date_diff('day', steps.segment_start, steps.segment_end) as step_days,
        case
            when steps.segment_start is null then null
            when date_diff('day', steps.segment_start, steps.segment_end) between 350 and 380
                then 12
            else (
                select min(month_counts.k)
                from month_counts
                where
                    date_diff('day', steps.segment_start, steps.segment_end)
                    between 28 * month_counts.k - 2 and 31 * month_counts.k + 4
            )
        end as step_months
    from steps
),

fitting as (
    select
        id,
        segment_number,
        case when step_months = 12 then 'yearly' else 'monthly' end as period
    from fitted
    where step_months is not null
),

nearest as (
    -- for each segment, the nearest fitting step at or after it, and the nearest before it
    select
        id,
        segment_number,
        segment_start,
        segment_end,
        segments,
        step_days,
        step_months,
        min(case when step_months is not null then segment_number end) over (
            partition by id order by segment_number nulls first
            rows between current row and unbounded following
        ) as later_fit,
        max(case when step_months is not null then segment_number end) over (
            partition by id order by segment_number nulls first
            rows between unbounded preceding and 1 preceding
        ) as earlier_fit
    from fitted
),

final as (
    select
        nearest.id as subscription_id,
        nearest.segment_start,
        nearest.segment_end,
        nearest.step_days,
        nearest.step_months,
        coalesce(later.period, earlier.period, 'unknown') as period,
        nearest.segment_number = nearest.segments as is_last
    from nearest
    left join fitting as later
        on later.id = nearest.id
        and later.segment_number = nearest.later_fit
    left join fitting as earlier
        on earlier.id = nearest.id
        and earlier.segment_number = nearest.earlier_fit
)

select * from final
order by subscription_id, segment_end
