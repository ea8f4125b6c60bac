-- subscription_lifetimes_churn_matches_expired_events: ties analytics.subscription_lifetimes to
-- analytics.subscription_events and analytics.subscriptions_current.
--
-- Expects: the churned lifetimes are the `expired` events, and there is one lifetime per live
--   subscription.
-- Returns: the four totals when either pair differs.

select * from (
    select
        (select count(*) from analytics.subscription_lifetimes where is_churned)
            as churned,
        (select count(*) from analytics.subscription_events where event_type = 'expired')
            as expired_events,
        (select count(*) from analytics.subscription_lifetimes) as lifetimes,
        (select count(*) from analytics.subscriptions_current where not is_test)
            as live_subscriptions
) as totals
where churned <> expired_events or lifetimes <> live_subscriptions
