-- survival_curve: the Kaplan-Meier curve of days from first seen to the first churn (a step
-- line, with the 50% line that gives the median lifetime).
-- Reads analytics.survival_curve, one row per day with an exit, and the median lifetime the
-- report states (analytics.report_figures, one row: computed there once, NULL while the curve
-- has not come down to 50%). The survival is cast to double precision, as the rates of
-- cohort_retention.sql, so both engines give floats.
select curve.day, curve.at_risk, curve.churned, curve.censored,
    cast(curve.survival as double precision) as survival,
    figures.median_lifetime_days
from analytics.survival_curve as curve
cross join analytics.report_figures as figures
order by curve.day
