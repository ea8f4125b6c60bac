-- monthly_renewals_outcomes_add_up_to_came_due: ties the outcomes of analytics.monthly_renewals to
-- `came_due`.
--
-- Expects: renewed + churned + undecided = came_due for every month and period.
-- Returns: the rows where they do not add up.

select month, period, came_due, renewed, churned, undecided
from analytics.monthly_renewals
where renewed + churned + undecided <> came_due
