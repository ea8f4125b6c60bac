-- users: everyone the warehouse knows, with profile, platforms, settings and subscriptions.
--
-- Grain: one row per user_id (the service's user id): listed in the settings list, fetched from
-- the accounts endpoint, or the `service_id` of a live subscription.
-- `display_name`: the primary platform profile's display name (or name), else the twitch
--   profile of the settings list.
-- `primary_platform`, `platforms`, `account_status`: from the accounts endpoint ('found',
--   'missing' when it answered 404, NULL when not fetched yet); `platforms` falls back to the
--   settings list's profiles when the accounts were not fetched.
-- `in_settings_list`: the latest settings read listed the user. `has_settings`: the stored
--   settings object has at least one key.
-- `subscriptions`, `usable_subscriptions`: live subscriptions with this `service_id`, all and
--   usable as of as_of.
--
-- @test unique(user_id)
-- @test not_null(user_id, in_settings_list, has_settings, subscriptions, usable_subscriptions)

with settings as (
    select *
    from analytics.stg_user_settings
),

accounts as (
    select *
    from analytics.stg_user_accounts
),

profiles as (
    select *
    from analytics.stg_user_account_profiles
),

subscription_counts as (
    select
        service_id as user_id,
        count(*) as subscriptions,
        count(*) filter (where is_usable) as usable_subscriptions
    from analytics.subscriptions_current
    where not is_test and service_id is not null
    group by service_id
),

known_users as (
    select user_id from settings
    union
    select user_id from accounts
    union
    select user_id from subscription_counts
),

final as (
    select
        known_users.user_id,
        coalesce(
            primary_profiles.display_name,
            primary_profiles.name,
            settings.twitch_display_name,
            settings.twitch_name
        ) as display_name,
        accounts.primary_platform,
        coalesce(accounts.platforms, settings.platforms) as platforms,
        accounts.account_status,
        settings.twitch_name,
        settings.twitch_display_name,
        settings.is_twitch_partnered,
        coalesce(settings.is_listed, false) as in_settings_list,
        coalesce(settings.has_settings, false) as has_settings,
        coalesce(settings.settings_count, 0) as settings_count,
        coalesce(subscription_counts.subscriptions, 0) as subscriptions,
        coalesce(subscription_counts.usable_subscriptions, 0) as usable_subscriptions,
        accounts.fetched_at as account_fetched_at
    from known_users
    left join settings using (user_id)
    left join accounts using (user_id)
    left join profiles as primary_profiles
        on primary_profiles.user_id = known_users.user_id
        and primary_profiles.platform = accounts.primary_platform
    left join subscription_counts on subscription_counts.user_id = known_users.user_id
)

select * from final
order by user_id
