-- expiring_soon_within_30_days_and_usable: ties analytics.expiring_soon to analytics.as_of.
--
-- Expects: every subscription listed expires after as_of (it is still usable) and at most 30 days
--   later.
-- Returns: the subscriptions outside that window.

select soon.id from analytics.expiring_soon as soon
cross join analytics.as_of as clock
where soon.expires_at <= clock.as_of or soon.expires_at > clock.as_of + interval 30 day
