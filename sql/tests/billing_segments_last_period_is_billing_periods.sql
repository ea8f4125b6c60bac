-- billing_segments_last_period_is_billing_periods: ties the latest paid period of each live
-- subscription (analytics.billing_segments) to its billing period (analytics.billing_periods).
--
-- Expects: the segment ending at a subscription's latest recorded expiry has the period
--   billing_periods infers (its most recent fitting step), and every live subscription with a
--   recorded expiry has exactly one latest segment.
-- Returns: the subscriptions where they differ.

select periods.subscription_id, periods.period, segments.period as last_segment_period
from analytics.billing_periods as periods
left join analytics.billing_segments as segments
    on segments.subscription_id = periods.subscription_id and segments.is_last
where (segments.subscription_id is null and periods.observed_steps > 0)
   or (segments.subscription_id is not null and segments.period <> periods.period)
