-- reactivations: canceled subscriptions that came back, per month: saved (before their paid
-- period ran out) and won back (after it); stacked bars.
-- Reads analytics.reactivations, one row per month.
select month, saved, won_back, reactivated, is_complete
from analytics.reactivations
order by month
