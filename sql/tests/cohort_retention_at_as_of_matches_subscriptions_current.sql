-- cohort_retention_at_as_of_matches_subscriptions_current: ties the month of as_of in
-- analytics.cohort_retention to analytics.subscriptions_current.
--
-- Expects: the usable subscriptions of the month measured at as_of (`measured_at`; one month:
--   the last, also when as_of is exactly its end), summed over the cohorts, are the live
--   subscriptions usable now.
-- Returns: both totals when they differ.

select * from (
    select
        (select coalesce(sum(retention.usable), 0)
         from analytics.cohort_retention as retention
         cross join analytics.as_of as clock
         where retention.measured_at = clock.as_of) as usable_in_cohorts,
        (select count(*) from analytics.subscriptions_current
         where not is_test and is_usable) as usable_now
) as totals
where usable_in_cohorts <> usable_now
