-- stg_user_accounts: the connected accounts of each user (spec 4.3), as last fetched.
--
-- Grain: one row per user_id fetched. `account_status` is 'found', or 'missing' when the API
-- answered 404 for the user. `platforms` is the comma list of linked platforms.
--
-- @optional devportal.user_accounts(user_id bigint, status varchar, primary_platform varchar, platforms varchar, fetched_at timestamp)
-- @test unique(user_id)
-- @test not_null(user_id, account_status)
-- @test accepted_values(account_status: found, missing)

select
    user_id,
    status as account_status,
    primary_platform,
    platforms,
    fetched_at
from devportal.user_accounts
