-- survival_curve: the Kaplan-Meier estimate of how long a live subscription lasts after it was
-- first seen, by day.
--
-- Grain: one row per `day` (whole days since first seen, subscription_lifetimes.lifetime_days)
-- on which a subscription churned or was censored, plus day 0; no rows while there is no
-- subscription to follow.
-- Who is followed: the live subscriptions first seen after the first sync (subscription_lifetimes
--   with `is_backfill` false). The first sync's backfill is left out: those subscriptions
--   started at unknown times before it (the API gives no creation date), so they are
--   left-truncated and their time since the start cannot be counted; a backfilled survivor
--   would also overstate survival, as only the ones that lasted until the first sync are seen.
-- `at_risk`: followed subscriptions whose lifetime is at least `day` (neither churned nor
--   censored before it). `churned`: those churned on `day` (their first `expired` event: a
--   lapse later won back is a churn here as in monthly_churn, the curve is time to first churn);
--   `censored`: those not churned whose observation ended on `day` (usable at as_of, or no
--   longer listed: see subscription_lifetimes.observed_until).
-- `survival`: the product over the days up to and including `day` of (1 - churned / at_risk),
--   the share expected to last beyond `day`; computed as exp(running sum of ln(1 - churned /
--   at_risk)) and rounded to 6 decimals (so every engine gives the same value, whatever the
--   order it adds in); exactly 0 from the first day on which everyone at risk churned. The
--   median lifetime is the first `day` whose `survival` is <= 0.5
--   (report_figures.median_lifetime_days).
--
-- @test unique(day)
-- @test not_null(day, at_risk, churned, censored, survival)

with followed as (
    select
        lifetime_days,
        is_churned
    from analytics.subscription_lifetimes
    where not is_backfill
),

exits as (
    -- the day each followed subscription leaves the risk set, plus day 0 (with no exits) so
    -- the curve starts there
    select
        lifetime_days as day,
        case when is_churned then 1 else 0 end as churned,
        case when is_churned then 0 else 1 end as censored
    from followed
    union all
    select
        0 as day,
        0 as churned,
        0 as censored
    from (select count(*) as subscriptions from followed) as total
    where total.subscriptions > 0
),

day_counts as (
    select
        day,
        sum(churned) as churned,
        sum(censored) as censored
    from exits
    group by day
),

risk_sets as (
    -- at risk on a day: everyone leaving on that day or later
    select
        day,
        cast(sum(churned + censored) over (
            order by day desc nulls last rows between unbounded preceding and current row
        ) as bigint) as at_risk,
        cast(churned as bigint) as churned,
        cast(censored as bigint) as censored
    from day_counts
),

factors as (
    -- ln of each day's (1 - churned / at_risk); NULL when everyone at risk churned (ln(0) is
    -- an error on PostgreSQL), which `wiped_out` records instead
    select
        day,
        at_risk,
        churned,
        censored,
        case when churned < at_risk then ln(1.0 - churned / at_risk) end as log_factor,
        case when churned = at_risk then 1 else 0 end as wiped_out
    from risk_sets
),

products as (
    -- running over the days; `day` is never NULL, and `nulls first` / `desc nulls last` are the
    -- null orders every engine can spell in a window (BigQuery has no other)
    select
        day,
        at_risk,
        churned,
        censored,
        max(wiped_out) over up_to_day as wiped_out,
        coalesce(sum(log_factor) over up_to_day, 0) as log_survival
    from factors
    window up_to_day as (order by day nulls first rows between unbounded preceding and current row)
),

final as (
    select
        day,
        at_risk,
        churned,
        censored,
        case
            when wiped_out = 1 then 0.0
            else cast(cast(exp(log_survival) as decimal(9, 6)) as double)
        end as survival
    from products
)

select * from final
order by day
