-- survival_curve_at_risk_steps_down_by_its_exits: ties each day of analytics.survival_curve to the
-- next.
--
-- Expects: the next day's at_risk = at_risk - churned - censored.
-- Returns: the days where it does not.

select day, at_risk, churned, censored, next_at_risk from (
    select day, at_risk, churned, censored,
           lead(at_risk) over (order by day) as next_at_risk
    from analytics.survival_curve
) as steps
where next_at_risk is not null and next_at_risk <> at_risk - churned - censored
