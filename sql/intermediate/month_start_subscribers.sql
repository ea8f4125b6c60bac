-- month_start_subscribers: the live subscriptions usable at the first instant of each month.
--
-- Grain: one row per (month_start, subscription_id), over the months of month_spine: the base
-- monthly_churn and churn_by_platform divide a month's churn by (`subscribers_at_start`).
-- Months starting at or after the first sync (`is_estimate` false) are observed: the version
--   valid at the month start (valid_from <= it < valid_to, or still current) has
--   `usable_until` after it (see subscription_versions).
-- Months starting before the first sync (`is_estimate` true) are estimated: the API gives no
--   creation date, so these are the subscriptions the first sync listed whose `expires_at` (as
--   then listed) was after the month start, as if every one of them already existed then. An
--   upper bound, so a churn rate on it is a lower bound.
--
-- @test unique(month_start, subscription_id)
-- @test not_null(month_start, subscription_id, is_estimate)

with observed as (
    select
        spine.month_start,
        live_versions.id as subscription_id,
        false as is_estimate
    from analytics.month_spine as spine
    cross join analytics.as_of as clock
    inner join analytics.subscription_versions as live_versions
        on not live_versions.is_test
        and live_versions.valid_from <= spine.month_start
        and (live_versions.valid_to is null or live_versions.valid_to > spine.month_start)
        and live_versions.usable_until > spine.month_start
    where spine.month_start >= clock.first_sync_at
),

estimated as (
    select
        spine.month_start,
        live_versions.id as subscription_id,
        true as is_estimate
    from analytics.month_spine as spine
    cross join analytics.as_of as clock
    inner join analytics.subscription_versions as live_versions
        on not live_versions.is_test
        and live_versions.version_number = 1
        and live_versions.valid_from <= clock.first_sync_at
        and live_versions.expires_at > spine.month_start
    where spine.month_start < clock.first_sync_at
),

final as (
    select * from observed
    union all
    select * from estimated
)

select * from final
