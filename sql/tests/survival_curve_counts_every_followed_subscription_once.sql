-- survival_curve_counts_every_followed_subscription_once: ties analytics.survival_curve to
-- analytics.subscription_lifetimes.
--
-- Expects: the curve starts with every followed lifetime (backfill aside) at risk, and its churned
--   and censored exits sum to those lifetimes' churned and censored.
-- Returns: the lifetimes' counts when the curve's differ.

with followed as (
    select count(*) as subscriptions,
           count(*) filter (where is_churned) as churned,
           count(*) filter (where is_censored) as censored
    from analytics.subscription_lifetimes where not is_backfill
),
curve as (
    select coalesce(max(at_risk), 0) as subscriptions,
           coalesce(sum(churned), 0) as churned,
           coalesce(sum(censored), 0) as censored
    from analytics.survival_curve
)
select * from followed
except
select * from curve
