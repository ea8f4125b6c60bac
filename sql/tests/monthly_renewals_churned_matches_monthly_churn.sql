-- monthly_renewals_churned_matches_monthly_churn: ties analytics.monthly_renewals to
-- analytics.monthly_churn.
--
-- Expects: each month's churned subscriptions (period `all`) are monthly_churn's (a month one side
--   lacks counts 0).
-- Returns: the months where they differ, with both counts.

with renewals as (
    select month, churned from analytics.monthly_renewals where period = 'all'
)
select coalesce(renewals.month, churn.month) as month,
       renewals.churned as renewals_churned, churn.churned as monthly_churn_churned
from renewals
full outer join analytics.monthly_churn as churn on churn.month = renewals.month
where coalesce(renewals.churned, 0) <> coalesce(churn.churned, 0)
