-- billing_periods_one_row_per_live_subscription: ties analytics.billing_periods to
-- analytics.subscriptions_current.
--
-- Expects: one row per live subscription, and none for any other.
-- Returns: each subscription only one side has (`only_in_billing_periods`: true when only
--   billing_periods has it).

select coalesce(live.id, periods.subscription_id) as id,
       live.id is null as only_in_billing_periods
from (select id from analytics.subscriptions_current where not is_test) as live
full outer join analytics.billing_periods as periods
    on periods.subscription_id = live.id
where live.id is null or periods.subscription_id is null
