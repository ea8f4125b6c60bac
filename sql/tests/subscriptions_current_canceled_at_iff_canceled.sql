-- subscriptions_current_canceled_at_iff_canceled: ties `canceled_at` of
-- analytics.subscriptions_current to its `status`.
--
-- Expects: `canceled_at` is set exactly when the status is 'canceled'.
-- Returns: the subscriptions where one holds without the other.

select id, status, canceled_at from analytics.subscriptions_current
where (status = 'canceled') <> (canceled_at is not null)
