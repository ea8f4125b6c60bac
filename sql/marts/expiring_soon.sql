-- expiring_soon: live subscriptions whose use ends within 30 days after as_of.
--
-- Grain: one row per live subscription id that is usable and has `expires_at` <= as_of + 30 days.
-- `status`: the treatment (active, canceled or other) of `status_sent`, the status as sent
--   (see stg_subscriptions and `[analytics] status_map`).
-- `will_churn`: the subscription is canceled, so it ends at `expires_at`; an active one renews;
--   an 'other' one (a status not mapped) does neither as far as the models know: it is not
--   churn, and not counted as renewing either.
-- `days_left`: as in subscriptions_current (whole days, rounded up: 1..30).
--
-- @test unique(id)
-- @test not_null(id, expires_at, days_left, will_churn)

select
    current_subscriptions.id,
    current_subscriptions.service_id,
    current_subscriptions.status,
    current_subscriptions.status_sent,
    current_subscriptions.expires_at,
    current_subscriptions.days_left,
    current_subscriptions.status = 'canceled' as will_churn
from analytics.subscriptions_current as current_subscriptions
cross join analytics.as_of as clock
where
    not current_subscriptions.is_test
    and current_subscriptions.is_usable
    and current_subscriptions.expires_at <= clock.as_of + interval 30 day
order by current_subscriptions.expires_at, current_subscriptions.id
