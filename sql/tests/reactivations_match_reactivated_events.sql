-- reactivations_match_reactivated_events: ties analytics.reactivations to
-- analytics.subscription_events.
--
-- Expects: each month with `reactivated` events (their `event_month`) has a row whose
--   `reactivated` is their number, and saved + won_back = reactivated.
-- Returns: the months where that does not hold.

with events as (
    select event_month::date as month, count(*) as reactivated
    from analytics.subscription_events where event_type = 'reactivated'
    group by event_month::date
)
select coalesce(events.month, reactivations.month) as month,
       events.reactivated as events, reactivations.reactivated
from events
full outer join analytics.reactivations on reactivations.month = events.month
where coalesce(events.reactivated, 0) <> coalesce(reactivations.reactivated, 0)
   or reactivations.month is null
   or reactivations.saved + reactivations.won_back <> reactivations.reactivated
