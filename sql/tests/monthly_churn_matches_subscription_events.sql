-- monthly_churn_matches_subscription_events: ties analytics.monthly_churn to
-- analytics.subscription_events and analytics.reactivations, month by month.
--
-- Expects: each month's `churned` is its `expired` events (every lapse, won back later or not,
--   in the month of its expiry), its `new` and `cancellations` its `new` and `canceled` events
--   after the first sync, its `won_back` its win-back `reactivated` events and reactivations'
--   `won_back` (in the month of the comeback), where the month was observed (`new` not NULL).
-- Returns: the months where a count differs, with both.

with events as (
    select event_month::date as month,
           count(*) filter (where event_type = 'expired') as churned,
           count(*) filter (where event_type = 'new' and not is_initial_load) as new_events,
           count(*) filter (where event_type = 'canceled' and not is_initial_load)
               as canceled_events,
           count(*) filter (where event_type = 'reactivated' and is_win_back) as won_back
    from analytics.subscription_events
    group by event_month::date
)
select coalesce(churn.month, events.month) as month,
       churn.churned, events.churned as expired_events,
       churn.new, events.new_events,
       churn.cancellations, events.canceled_events,
       churn.won_back, events.won_back as win_back_events, reactivations.won_back as reactivations
from analytics.monthly_churn as churn
full outer join events on events.month = churn.month
left join analytics.reactivations on reactivations.month = coalesce(churn.month, events.month)
where churn.month is null
    or churn.churned <> coalesce(events.churned, 0)
    or (churn.new is not null and churn.new <> coalesce(events.new_events, 0))
    or (churn.cancellations is not null
        and churn.cancellations <> coalesce(events.canceled_events, 0))
    or (churn.won_back is not null and churn.won_back <> coalesce(events.won_back, 0))
    or (churn.won_back is not null and reactivations.won_back is not null
        and churn.won_back <> reactivations.won_back)
