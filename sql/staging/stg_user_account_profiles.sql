-- stg_user_account_profiles: one linked platform profile of a user (spec 2.4).
--
-- Grain: one row per (user_id, platform). `name` and `platform_user_id` are the platform's own
-- handle and id as the sync found them in the profile object.
--
-- @optional devportal.user_account_profiles(user_id bigint, platform varchar, platform_user_id varchar, name varchar, display_name varchar)
-- @test unique(user_id, platform)
-- @test not_null(user_id, platform)

select
    user_id,
    platform,
    platform_user_id,
    name,
    display_name
from devportal.user_account_profiles
