-- stg_user_settings: users from the settings list (spec 2.3) with their twitch profile.
--
-- Grain: one row per user_id ever listed. The sync upserts, so a user who left the list keeps
-- the row from the last time it was listed; `is_listed` says whether the latest settings read
-- still had the user (its `last_seen_at` equals the newest one).
-- `has_settings`: the stored settings object has at least one key (`{}` counts as none).
--
-- @optional devportal.user_settings(user_id bigint, platforms varchar, has_twitch boolean, settings_count bigint, last_seen_at timestamp, twitch_id bigint, twitch_display_name varchar, twitch_name varchar, twitch_partnered bigint)
-- @test unique(user_id)
-- @test not_null(user_id)

select
    user_id,
    platforms,
    has_twitch,
    coalesce(settings_count, 0) as settings_count,
    coalesce(settings_count, 0) > 0 as has_settings,
    last_seen_at,
    last_seen_at = max(last_seen_at) over () as is_listed,
    twitch_id,
    twitch_display_name,
    twitch_name,
    -- the API sends 0/1; anything else non-zero is read as partnered
    twitch_partnered <> 0 as is_twitch_partnered
from devportal.user_settings
