-- monthly_churn: churned subscriptions per calendar month (bars; months before the first sync,
-- whose base is an estimate, hatched; the month to date pale, beside the full months) and the
-- churn rate (a line through the full months on its own axis; the month to date's rate so far
-- a point apart). `as_of`: how far the month to date has run.
-- Reads analytics.monthly_churn, one row per month.
select churn.month, churn.churned, churn.cancellations, churn.new, churn.subscribers_at_start,
    churn.churn_rate, churn.is_estimate, churn.is_complete, clock.as_of
from analytics.monthly_churn as churn
cross join analytics.as_of as clock
order by churn.month
