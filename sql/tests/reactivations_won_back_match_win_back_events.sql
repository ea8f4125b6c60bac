-- reactivations_won_back_match_win_back_events: ties analytics.reactivations' won_back and
-- saved to the win-back flag of analytics.subscription_events' reactivated events.
--
-- Expects: each month's `won_back` is the number of `reactivated` events with `is_win_back`
--   (their `event_month`: the month of the estimated comeback) and `saved` the number of the
--   others; a win-back event follows a canceled version whose expiry it is after.
-- Returns: the months where that does not hold, and any win-back event not after its lapse.

with events as (
    select event_month::date as month,
           count(*) filter (where is_win_back) as won_back,
           count(*) filter (where not is_win_back) as saved
    from analytics.subscription_events where event_type = 'reactivated'
    group by event_month::date
)
select coalesce(events.month, reactivations.month) as month,
       events.won_back as events_won_back, reactivations.won_back,
       events.saved as events_saved, reactivations.saved
from events
full outer join analytics.reactivations on reactivations.month = events.month
where coalesce(events.won_back, 0) <> coalesce(reactivations.won_back, 0)
   or coalesce(events.saved, 0) <> coalesce(reactivations.saved, 0)
union all
select event_month::date, null, null, null, null
from analytics.subscription_events
where event_type = 'reactivated' and is_win_back
  and not (event_at > previous_expires_at and event_at <= seen_at)
