-- users_cover_every_live_subscriber: ties analytics.users to analytics.subscriptions_current.
--
-- Expects: the `service_id` of every live subscription is a user.
-- Returns: the user ids the users table lacks.

select distinct service_id as user_id from analytics.subscriptions_current
where not is_test and service_id is not null
  and service_id not in (select user_id from analytics.users)
