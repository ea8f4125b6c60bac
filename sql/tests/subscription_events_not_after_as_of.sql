-- subscription_events_not_after_as_of: ties analytics.subscription_events to analytics.as_of.
--
-- Expects: no event after as_of (the models know nothing later than the latest successful sync).
-- Returns: the events after it.

select subscription_id, event_type, event_at
from analytics.subscription_events cross join analytics.as_of as clock
where event_at > clock.as_of
