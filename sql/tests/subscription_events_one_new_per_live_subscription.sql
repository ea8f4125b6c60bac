-- subscription_events_one_new_per_live_subscription: ties analytics.subscription_events to
-- analytics.subscriptions_current.
--
-- Expects: exactly one `new` event per live subscription, and no `new` event of a subscription the
--   current table lacks (test subscriptions aside).
-- Returns: each such subscription whose number of `new` events is not 1, with that number.

with new_events as (
    select subscription_id as id, count(*) as new_events
    from analytics.subscription_events where event_type = 'new'
    group by subscription_id
)
select id, coalesce(new_events.new_events, 0) as new_events
from analytics.subscriptions_current
full outer join new_events using (id)
where (subscriptions_current.is_test is distinct from true)
  and coalesce(new_events.new_events, 0) <> 1
