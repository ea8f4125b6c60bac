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
-- `step_days`, `step_months`: the fit of billing_periods' header (written here once;
--   billing_periods reads it), of the step from segment_start to segment_end (NULL for the
--   first segment, and `step_months` NULL when the step fits no number of months: 28k - 2 <=
--   days <= 31k + 4 for k = 1..11 is monthly, 350..380 days is a year).
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

with expiries as (
    select distinct
        id,
        expires_at
    from analytics.subscription_versions
    where not is_test and expires_at is not null
),

steps as (
    -- step_days is computed here, once per row, where the window is: PostgreSQL would
    -- otherwise repeat its date arithmetic in each test of the fit below
    select
        id,
        lag(expires_at) over by_expiry as segment_start,
        expires_at as segment_end,
        row_number() over by_expiry as segment_number,
        lead(expires_at) over by_expiry is null as is_last,
        date_diff('day', lag(expires_at) over by_expiry, expires_at) as step_days
    from expiries
    window by_expiry as (partition by id order by expires_at)
),

fitted as (
    -- the smallest k that fits, trying k = 1..11 in turn (a bigint, the column's type)
    select
        id,
        segment_start,
        segment_end,
        segment_number,
        is_last,
        step_days,
        cast(
            case
                when segment_start is null then null
                when step_days between 350 and 380 then 12
                when step_days between 28 * 1 - 2 and 31 * 1 + 4 then 1
                when step_days between 28 * 2 - 2 and 31 * 2 + 4 then 2
                when step_days between 28 * 3 - 2 and 31 * 3 + 4 then 3
                when step_days between 28 * 4 - 2 and 31 * 4 + 4 then 4
                when step_days between 28 * 5 - 2 and 31 * 5 + 4 then 5
                when step_days between 28 * 6 - 2 and 31 * 6 + 4 then 6
                when step_days between 28 * 7 - 2 and 31 * 7 + 4 then 7
                when step_days between 28 * 8 - 2 and 31 * 8 + 4 then 8
                when step_days between 28 * 9 - 2 and 31 * 9 + 4 then 9
                when step_days between 28 * 10 - 2 and 31 * 10 + 4 then 10
                when step_days between 28 * 11 - 2 and 31 * 11 + 4 then 11
            end as bigint
        ) as step_months
    from steps
),

nearest as (
    -- for each segment, the nearest fitting step at or after it, and the nearest before it,
    -- each as its segment_number * 2, + 1 when it is a year's
    select
        id,
        segment_number,
        segment_start,
        segment_end,
        is_last,
        step_days,
        step_months,
        min(
            case
                when step_months is not null
                    then segment_number * 2 + case when step_months = 12 then 1 else 0 end
            end
        ) over (
            partition by id order by segment_number nulls first
            rows between current row and unbounded following
        ) as later_fit,
        max(
            case
                when step_months is not null
                    then segment_number * 2 + case when step_months = 12 then 1 else 0 end
            end
        ) over (
            partition by id order by segment_number nulls first
            rows between unbounded preceding and 1 preceding
        ) as earlier_fit
    from fitted
),

final as (
    select
        id as subscription_id,
        segment_start,
        segment_end,
        step_days,
        step_months,
        case
            when coalesce(later_fit, earlier_fit) is null then 'unknown'
            when coalesce(later_fit, earlier_fit) % 2 = 1 then 'yearly'
            else 'monthly'
        end as period,
        is_last
    from nearest
)

select * from final
order by subscription_id, segment_end
