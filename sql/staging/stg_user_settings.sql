-- stg_user_settings: users from the settings list (spec 2.3) with their twitch profile.
--
-- Grain: one row per user_id ever listed. The sync writes a user's row when their entry
-- changed (`last_seen_at`: the clock of that read), so a user who left the list keeps the row
-- from the last time it was listed; `is_listed` says whether the latest verified settings read
-- still had the user (not in `user_settings_unlisted`).
-- `has_settings`: the stored settings object has at least one key (`{}` counts as none).
--
-- @optional devportal.user_settings(user_id bigint, platforms varchar, has_twitch boolean, settings_count bigint, last_seen_at timestamp, twitch_id bigint, twitch_display_name varchar, twitch_name varchar, twitch_partnered bigint)
-- @optional devportal.user_settings_unlisted(user_id bigint, unlisted_at timestamp)
-- @test unique(user_id)
-- @test not_null(user_id)

select
    user_id,
    platforms,
    has_twitch,
    coalesce(settings_count, 0) as settings_count,
    coalesce(settings_count, 0) > 0 as has_settings,
    last_seen_at,
    user_id not in (select user_id from devportal.user_settings_unlisted) as is_listed,
    twitch_id,
    twitch_display_name,
    twitch_name,
    -- the API sends 0/1; anything else non-zero is read as partnered
    twitch_partnered <> 0 as is_twitch_partnered
from devportal.user_settings
