-- win_back_events_match_mrr_changes: ties the win-backs of analytics.subscription_events (and so
-- reactivations' won_back) to the 'reactivated' movements of analytics.mrr_changes,
-- one by one.
--
-- Expects: every `reactivated` event with `is_win_back` has a 'reactivated' MRR change of the
--   same subscription at its `event_at` (the estimated comeback), and every 'reactivated' MRR
--   change is such an event: a subscription that lapsed and came back is one win-back in
--   every mart, at one time (a save moves no MRR).
-- Returns: the win-backs only one of them has.

with win_backs as (
    select subscription_id, event_at
    from analytics.subscription_events
    where event_type = 'reactivated' and is_win_back
),
reactivated_mrr as (
    select subscription_id, changed_at
    from analytics.mrr_changes
    where movement = 'reactivated'
)
select coalesce(win_backs.subscription_id, reactivated_mrr.subscription_id) as subscription_id,
       win_backs.event_at, reactivated_mrr.changed_at
from win_backs
full outer join reactivated_mrr
    on reactivated_mrr.subscription_id = win_backs.subscription_id
    and reactivated_mrr.changed_at = win_backs.event_at
where win_backs.subscription_id is null or reactivated_mrr.subscription_id is null
