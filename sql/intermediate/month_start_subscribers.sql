-- month_start_subscribers: the live subscriptions usable at the first instant of each month,
-- as stretches of consecutive month starts.
--
-- Grain: one row per (subscription_id, first_month_start): a stretch of the month starts of
-- month_spine, from `first_month_start` to `last_month_start`, at every one of which the
-- subscription was usable; the subscribers at a month start M are the rows with
-- first_month_start <= M <= last_month_start (join month_spine on that: one row per month and
-- subscription, 1.6 million at 100k subscriptions, where these are 170 thousand). The bases
-- monthly_churn and churn_by_platform divide a month's churn by (`subscribers_at_start`).
-- Months starting at or after the first sync (`is_estimate` false) are observed: the
--   subscription was usable at the month start, within one of its subscription_spells
--   (spell_start <= it < spell_end), exactly as daily_subscribers counts it at the snapshot of
--   that instant (the end of the month's last day): from its first paid instant as the syncs
--   revealed it (a subscription first seen by a later sync from its estimated start, not from
--   that sync), not during a lapse before a win-back, a canceled one until its `expires_at`
--   (sql/tests/month_start_subscribers_match_daily_subscribers). One stretch per spell that
--   holds a month start (spells of one subscription never overlap, so neither do its
--   stretches; two spells one after the other give two stretches).
-- Months starting before the first sync (`is_estimate` true) are estimated: the API gives no
--   creation date, so these are the subscriptions the first sync listed whose `expires_at` (as
--   then listed) was after the month start, or that had none (a lifetime plan:
--   subscription_versions.use_ends_at), as if every one of them already existed then: one
--   stretch each, from the spine's first month. An upper bound, so a churn rate on it is a
--   lower bound.
-- The month starts of an instant t: the first one at or after t is
--   `date_trunc('month', t - interval 1 microsecond) + interval 1 month`, the last one before
--   t is `date_trunc('month', t - interval 1 microsecond)`.
--
-- @test unique(first_month_start, subscription_id)
-- @test not_null(first_month_start, last_month_start, subscription_id, is_estimate)

-- the bounds are scalar subqueries, not a CTE cross joined to every row: a CTE read twice is
-- materialized, and a scan of one keeps PostgreSQL's plan in one process
with observed as (
    select
        spells.subscription_id,
        greatest(
            date_trunc('month', spells.spell_start - interval 1 microsecond),
            -- the month start before the first sync
            (select date_trunc('month', clock.first_sync_at - interval 1 microsecond) from analytics.as_of as clock)
        ) + interval 1 month as first_month_start,
        least(
            date_trunc('month', spells.spell_end - interval 1 microsecond),
            (select max(spine.month_start) from analytics.month_spine as spine)
        ) as last_month_start,
        false as is_estimate
    from analytics.subscription_spells as spells
),

estimated as (
    select
        live_versions.id as subscription_id,
        (select min(spine.month_start) from analytics.month_spine as spine) as first_month_start,
        least(
            date_trunc('month', live_versions.use_ends_at - interval 1 microsecond),
            (select date_trunc('month', clock.first_sync_at - interval 1 microsecond) from analytics.as_of as clock),
            (select max(spine.month_start) from analytics.month_spine as spine)
        ) as last_month_start,
        true as is_estimate
    from analytics.subscription_versions as live_versions
    where
        not live_versions.is_test
        and live_versions.version_number = 1
        and live_versions.valid_from <= (select clock.first_sync_at from analytics.as_of as clock)
        and live_versions.use_ends_at is not null
),

stretches as (
    select * from observed
    union all
    select * from estimated
),

final as (
    select
        first_month_start,
        last_month_start,
        subscription_id,
        is_estimate
    from stretches
    where first_month_start <= last_month_start
)

select * from final
