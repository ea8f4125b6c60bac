-- monthly_churn: churned subscriptions per calendar month (bars; months before the first sync,
-- whose base is an estimate, hatched) and the churn rate (a line on its own axis).
-- Reads analytics.monthly_churn, one row per month.
select month, churned, cancellations, new, subscribers_at_start, churn_rate,
    is_estimate, is_complete
from analytics.monthly_churn
order by month
