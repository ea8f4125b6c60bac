-- churn_by_platform_adds_up_to_monthly_churn: ties analytics.churn_by_platform to
-- analytics.monthly_churn.
--
-- Expects: the same months, and in each, the platforms' subscribers_at_start and churned sum to
--   monthly_churn's; a month with no subscriber and no churn (an account with none yet) has no
--   platform rows.
-- Returns: the months where they do not.

with platforms as (
    select month, sum(subscribers_at_start) as subscribers_at_start,
           sum(churned) as churned
    from analytics.churn_by_platform
    group by month
)
select churn.month, platforms.month as platform_month
from analytics.monthly_churn as churn
full outer join platforms on platforms.month = churn.month
where churn.month is null
   or (platforms.month is null and (churn.subscribers_at_start > 0 or churn.churned > 0))
   or churn.subscribers_at_start <> platforms.subscribers_at_start
   or churn.churned <> platforms.churned
