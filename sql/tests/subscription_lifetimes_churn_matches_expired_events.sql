-- subscription_lifetimes_churn_matches_expired_events: ties analytics.subscription_lifetimes to
-- analytics.subscription_events and analytics.subscriptions_current.
--
-- Expects: the churned lifetimes are the subscriptions with an `expired` event (a subscription
--   that lapsed, came back and lapsed again has two: its lifetime ends at the first), each
--   ending at its first one, and there is one lifetime per live subscription.
-- Returns: the four totals when either pair differs, or a lifetime not ending at its first
--   expiry.

select * from (
    select
        (select count(*) from analytics.subscription_lifetimes where is_churned)
            as churned,
        (select count(distinct subscription_id) from analytics.subscription_events
         where event_type = 'expired') as expired_subscriptions,
        (select count(*) from analytics.subscription_lifetimes) as lifetimes,
        (select count(*) from analytics.subscriptions_current where not is_test)
            as live_subscriptions,
        (select count(*) from analytics.subscription_lifetimes as lifetimes
         where lifetimes.is_churned and lifetimes.churned_at <> (
             select min(events.event_at) from analytics.subscription_events as events
             where events.subscription_id = lifetimes.subscription_id
                 and events.event_type = 'expired'
         )) as not_at_first_expiry
) as totals
where churned <> expired_subscriptions or lifetimes <> live_subscriptions
    or not_at_first_expiry > 0
