-- monthly_churn_churned_by_period_adds_up: ties `churned` of analytics.monthly_churn to its split
-- by billing period.
--
-- Expects: churned = churned_monthly + churned_yearly + churned_unknown in every month.
-- Returns: the months where the parts do not add up.

select month, churned, churned_monthly, churned_yearly, churned_unknown
from analytics.monthly_churn
where churned <> churned_monthly + churned_yearly + churned_unknown
