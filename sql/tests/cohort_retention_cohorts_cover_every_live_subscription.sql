-- cohort_retention_cohorts_cover_every_live_subscription: ties analytics.cohort_retention to
-- analytics.subscriptions_current.
--
-- Expects: the cohort sizes (at month offset 0) sum to the live subscriptions.
-- Returns: both totals when they differ.

select * from (
    select
        (select coalesce(sum(cohort_size), 0) from analytics.cohort_retention
         where month_offset = 0) as cohort_sizes,
        (select count(*) from analytics.subscriptions_current where not is_test)
            as live_subscriptions
) as totals
where cohort_sizes <> live_subscriptions
