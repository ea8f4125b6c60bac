-- mrr_movements_reactivated_match_win_backs: ties analytics.mrr_movements' reactivated_mrr to
-- analytics.reactivations' won_back, month by month, through the win-backs' amounts in
-- analytics.mrr_changes.
--
-- Expects: where the month's money is measured (reactivated_mrr not NULL), reactivated_mrr is
--   the sum of the amounts the month's won-back subscriptions came back at (their
--   'reactivated' changes after the first day), so it is 0 in a month without a win-back and,
--   with every price above 0, above 0 in a month with one; the month's number of those
--   changes is its won_back (a win-back on the first day is part of the base).
-- Returns: the months where reactivations and mrr_movements disagree.

with changes as (
    select date_trunc('month', day::timestamp)::date as month,
           count(*) as won_back,
           count(*) filter (where not is_base) as moved,
           sum(amount_after) filter (where not is_base) as amount
    from analytics.mrr_changes
    where movement = 'reactivated'
    group by date_trunc('month', day::timestamp)::date
)
select reactivations.month, reactivations.won_back, changes.won_back as changes_won_back,
       movements.reactivated_mrr, changes.amount
from analytics.reactivations
left join changes on changes.month = reactivations.month
left join analytics.mrr_movements as movements on movements.month = reactivations.month
where reactivations.won_back <> coalesce(changes.won_back, 0)
   or (
       movements.reactivated_mrr is not null
       and cast(movements.reactivated_mrr as decimal(18, 6))
           <> coalesce(changes.amount, 0)
   )
