-- monthly_churn_churned_matches_expired_events: ties analytics.monthly_churn to
-- analytics.subscription_events.
--
-- Expects: the churned subscriptions of all months together are the `expired` events.
-- Returns: both totals when they differ.

select * from (
    select
        (select coalesce(sum(churned), 0) from analytics.monthly_churn) as churned,
        (select count(*) from analytics.subscription_events where event_type = 'expired')
            as expired_events
) as totals
where churned <> expired_events
