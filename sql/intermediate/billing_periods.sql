-- billing_periods: each live subscription's billing period, inferred from its history.
--
-- Grain: one row per live subscription (`subscription_id`), as in subscriptions_current.
-- The API has no period field. An active subscription renews by moving `expires_at` on by one
-- period, so the period shows in the steps between the distinct `expires_at` values its history
-- recorded (unparsable, NULL expiries left out), taken in ascending order.
-- `observed_steps`: how many such steps there are (distinct expiries - 1).
-- A step of d days (whole calendar days between the two expiries) fits:
--   k months, k = 1..11: 28k - 2 <= d <= 31k + 4 (k short months less 2 days up to k long
--     months plus 4 days; one month is 26..35 days, two are 54..66). k > 1 means the syncs
--     were sparser than the period and missed k - 1 renewals in between; any k says 'monthly'
--     (only a monthly subscription moves its expiry on by less than a year);
--   a year: 350 <= d <= 380 -> 'yearly'.
-- `period`: what the most recent fitting step (the one ending at the latest expiry) says; a
--   plan switch shows in its latest renewal. 'unknown' when no step fits (e.g. a win-back whose
--   new expiry is counted from the day it came back) or there is no step at all (a single
--   expiry: seen by one sync only, or never renewed while the syncs watched). So a subscription
--   that ends before a renewal was seen stays 'unknown': most churn is 'unknown', and the
--   monthly and yearly groups hold subscriptions that renewed at least once (their renewal
--   rates in monthly_renewals are upper bounds).
-- `step_days`: the step that decided the period; for 'unknown' the most recent step (which
--   fits nothing), NULL when there is none. `step_months`: the months it spans (the smallest k
--   that fits, 12 for a year), NULL for 'unknown'.
--
-- @test unique(subscription_id)
-- @test not_null(subscription_id, period, observed_steps)
-- @test accepted_values(period: monthly, yearly, unknown)

with live_subscriptions as (
    select id
    from analytics.subscriptions_current
    where not is_test
),

expiries as (
    select distinct
        id,
        expires_at
    from analytics.subscription_versions
    where not is_test and expires_at is not null
),

steps_with_first as (
    select
        id,
        expires_at,
        date_diff(
            'day', lag(expires_at) over (partition by id order by expires_at), expires_at
        ) as step_days
    from expiries
),

steps as (
    select *
    from steps_with_first
    where step_days is not null
),

month_counts as (
    select series.k
    from generate_series(1, 11) as series(k)
),

fitted_steps as (
    select
        steps.id,
        steps.expires_at,
        steps.step_days,
        case
            when steps.step_days between 350 and 380 then 12
            else (
                select min(month_counts.k)
                from month_counts
                where steps.step_days between 28 * month_counts.k - 2 and 31 * month_counts.k + 4
            )
        end as step_months
    from steps
),

ranked_steps as (
    -- fitting steps first, then the latest
    select
        id,
        step_days,
        step_months,
        row_number() over (
            partition by id
            order by case when step_months is null then 1 else 0 end, expires_at desc
        ) as step_rank
    from fitted_steps
),

step_counts as (
    select
        id,
        count(*) as observed_steps
    from steps
    group by id
),

final as (
    select
        live_subscriptions.id as subscription_id,
        case
            when ranked_steps.step_months = 12 then 'yearly'
            when ranked_steps.step_months is not null then 'monthly'
            else 'unknown'
        end as period,
        coalesce(step_counts.observed_steps, 0) as observed_steps,
        ranked_steps.step_days,
        ranked_steps.step_months
    from live_subscriptions
    left join ranked_steps
        on ranked_steps.id = live_subscriptions.id
        and ranked_steps.step_rank = 1
    left join step_counts on step_counts.id = live_subscriptions.id
)

select * from final
order by subscription_id
