-- reactivations: canceled subscriptions that came back, per month: saved (before their paid
-- period ran out: no use lost) and won back (after a lapse, in the month they came back: the
-- subscriptions of mrr_movements' reactivated MRR); stacked bars.
-- Reads analytics.reactivations, one row per month.
select month, saved, won_back, reactivated, is_complete
from analytics.reactivations
order by month
