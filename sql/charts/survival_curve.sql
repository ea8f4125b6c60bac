-- survival_curve: the Kaplan-Meier curve of days from first seen to churn (a step line, with
-- the 50% line that gives the median lifetime).
-- Reads analytics.survival_curve, one row per day with an exit. The survival is cast to double
-- precision, as the rates of cohort_retention.sql, so both engines give floats.
select day, at_risk, churned, censored,
    cast(survival as double precision) as survival
from analytics.survival_curve
order by day
