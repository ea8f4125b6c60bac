-- monthly_renewals: the renewal rate per month of each billing period (monthly, yearly,
-- unknown, all): renewed / (renewed + churned) of the subscriptions that came due; months that
-- began before the first sync (`is_estimate`: renewals before it are unseen) are left out.
-- Reads analytics.monthly_renewals, one row per (month, period). The rate is cast to double
-- precision, as in cohort_retention.sql, so both engines give floats.
select month, period, came_due, renewed, churned, undecided,
    cast(renewal_rate as double precision) as renewal_rate, is_estimate, is_complete
from analytics.monthly_renewals
order by month, period
