-- daily_subscribers: live subscribers per day, rebuilt from the SCD2 history.
--
-- Grain: one row per calendar day (`day`) from the day of the first sync to the day of as_of.
-- Each day is measured at `snapshot_at`: the end of the day (midnight after it), or as_of for
-- the day as_of falls in, so the last row equals subscriptions_current now.
-- `usable`: subscriptions usable at snapshot_at: within one of their subscription_spells (from
--   the first paid instant as the syncs revealed it until a version was replaced or its use ran
--   out, see subscription_versions' `usable_until`; a lapse before a win-back is a gap). A
--   subscription first seen by a sync after the first one counts from its estimated first paid
--   instant, between that sync and the one before (its first `expires_at` minus its billing
--   period, or an estimate while the period is unknown: subscription_spells), and a win-back
--   from its estimated comeback, not from the sync that saw them: the series moves when the
--   subscriptions started, not when the syncs ran. The first sync's subscriptions count from
--   the first day, the history's base, as before.
--   `active` / `canceled_usable`: the usable ones whose status as last observed by then was
--   active / canceled (canceled but still in their paid period). Status is as observed: a
--   cancellation counts from the sync that saw it; the days before a subscription was first
--   seen have the status first seen.
-- `other_usable`: the usable ones whose status was neither (a status the spec does not show,
--   or none), so usable = active + canceled_usable + other_usable. This split is by the status
--   as the API sent it (`status_sent`), like the report's usable line, which names each other
--   status with its treatment; `[analytics] status_map` changes what such a status means for
--   churn and renewals, not which status it is.
-- `estimated_usable`: the part of `usable` that rests on an estimated start: subscriptions
--   counted at snapshot_at only because their start (a first paid instant, or a win-back's
--   comeback) was placed before the sync that first saw it (subscription_spells
--   .estimated_until: spell_start <= snapshot_at < that sync). 0 once a sync has seen every one
--   of them, so always 0 on the last day (as_of); between two syncs (the first day too), at most
--   the subscriptions the later one first saw. usable - estimated_usable is what the syncs saw.
--
-- @test unique(day)
-- @test not_null(day, snapshot_at, usable, active, canceled_usable, other_usable)
-- @test not_null(estimated_usable)

with clock as (
    -- as_of and the first day (changes before the first sync count on it)
    select
        as_of,
        first_sync_at::date as first_day
    from analytics.as_of
),

snapshots as (
    select
        day,
        snapshot_at
    from analytics.day_spine
),

usable_spells as not materialized (
    -- the stretch of time each live version vouches for (subscription_spells), and the part of
    -- it before a sync had seen it (estimated_until)
    select
        status_sent,
        spell_start,
        spell_end,
        estimated_until
    from analytics.subscription_spells
),

changes as (
    select
        status_sent,
        spell_start as changed_at,
        1 as delta,
        case when estimated_until is null then 0 else 1 end as estimated_delta
    from usable_spells
    union all
    select
        status_sent,
        spell_end as changed_at,
        -1 as delta,
        0 as estimated_delta
    from usable_spells
    union all
    select
        status_sent,
        estimated_until as changed_at,
        0 as delta,
        -1 as estimated_delta
    from usable_spells
    where estimated_until is not null
),

changes_by_day as (
    -- each change counts from the first snapshot at or after it: the end of the day it falls in
    -- (a change at exactly midnight ends the day before), the first day's for anything earlier;
    -- a change after as_of reaches no snapshot
    select
        greatest(
            (changes.changed_at - interval 1 microsecond)::date, (select first_day from clock)
        ) as day,
        sum(changes.delta) as usable_delta,
        sum(changes.delta) filter (where changes.status_sent = 'active') as active_delta,
        sum(changes.delta) filter (where changes.status_sent = 'canceled') as canceled_delta,
        sum(changes.delta) filter (
            where changes.status_sent is null
                or changes.status_sent not in ('active', 'canceled')
        ) as other_delta,
        sum(changes.estimated_delta) as estimated_delta
    from changes
    where changes.changed_at <= (select as_of from clock)
    group by 1
),

-- running totals; snapshot_at is never NULL, `nulls first` is the null order every engine can
-- spell in a window aggregate (BigQuery has no NULLS LAST there)
final as (
    select
        snapshots.day,
        snapshots.snapshot_at,
        sum(coalesce(changes_by_day.usable_delta, 0)) over (
            order by snapshots.snapshot_at nulls first rows unbounded preceding
        )::bigint as usable,
        sum(coalesce(changes_by_day.active_delta, 0)) over (
            order by snapshots.snapshot_at nulls first rows unbounded preceding
        )::bigint as active,
        sum(coalesce(changes_by_day.canceled_delta, 0)) over (
            order by snapshots.snapshot_at nulls first rows unbounded preceding
        )::bigint as canceled_usable,
        sum(coalesce(changes_by_day.other_delta, 0)) over (
            order by snapshots.snapshot_at nulls first rows unbounded preceding
        )::bigint as other_usable,
        sum(coalesce(changes_by_day.estimated_delta, 0)) over (
            order by snapshots.snapshot_at nulls first rows unbounded preceding
        )::bigint as estimated_usable
    from snapshots
    left join changes_by_day using (day)
)

select * from final
order by day
