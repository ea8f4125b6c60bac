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
-- The steps and their fit are billing_segments' (one per paid period, the rule applied once).
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

steps as (
    -- every step between two consecutive recorded expiries, fitted once (billing_segments
    -- applies the rule above to each)
    select
        subscription_id,
        segment_end,
        step_days,
        step_months
    from analytics.billing_segments
    where segment_start is not null
),

ranked_steps as (
    -- fitting steps first, then the latest; and how many steps the subscription has
    select
        subscription_id,
        step_days,
        step_months,
        row_number() over (
            partition by subscription_id
            order by case when step_months is null then 1 else 0 end, segment_end desc
        ) as step_rank,
        count(*) over (partition by subscription_id) as observed_steps
    from steps
),

final as (
    select
        live_subscriptions.id as subscription_id,
        case
            when ranked_steps.step_months = 12 then 'yearly'
            when ranked_steps.step_months is not null then 'monthly'
            else 'unknown'
        end as period,
        coalesce(ranked_steps.observed_steps, 0) as observed_steps,
        ranked_steps.step_days,
        ranked_steps.step_months
    from live_subscriptions
    left join ranked_steps
        on ranked_steps.subscription_id = live_subscriptions.id
        and ranked_steps.step_rank = 1
)

select * from final
order by subscription_id
