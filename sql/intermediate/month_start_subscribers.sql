-- month_start_subscribers: the live subscriptions usable at the first instant of each month.
--
-- Grain: one row per (month_start, subscription_id), over the months of month_spine: the base
-- monthly_churn and churn_by_platform divide a month's churn by (`subscribers_at_start`).
-- Months starting at or after the first sync (`is_estimate` false) are observed: the
--   subscription was usable at the month start, within one of its subscription_spells
--   (spell_start <= it < spell_end), exactly as daily_subscribers counts it at the snapshot of
--   that instant (the end of the month's last day): from its first paid instant as the syncs
--   revealed it (a subscription first seen by a later sync from its estimated start, not from
--   that sync), not during a lapse before a win-back, a canceled one until its `expires_at`
--   (sql/tests/month_start_subscribers_match_daily_subscribers).
-- Months starting before the first sync (`is_estimate` true) are estimated: the API gives no
--   creation date, so these are the subscriptions the first sync listed whose `expires_at` (as
--   then listed) was after the month start, or that had none (a lifetime plan:
--   subscription_versions.use_ends_at), as if every one of them already existed then. An
--   upper bound, so a churn rate on it is a lower bound.
--
-- @test unique(month_start, subscription_id)
-- @test not_null(month_start, subscription_id, is_estimate)

with observed as (
    -- spells of one subscription never overlap: at most one holds a given instant
    select
        spine.month_start,
        spells.subscription_id,
        false as is_estimate
    from analytics.month_spine as spine
    cross join analytics.as_of as clock
    inner join analytics.subscription_spells as spells
        on spells.spell_start <= spine.month_start
        and spells.spell_end > spine.month_start
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
        and live_versions.use_ends_at > spine.month_start
    where spine.month_start < clock.first_sync_at
),

final as (
    select * from observed
    union all
    select * from estimated
)

select * from final
