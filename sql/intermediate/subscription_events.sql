-- subscription_events: what happened to live subscriptions, as the syncs observed it.
--
-- Grain: one row per (subscription_id, event_type, event_at). Live subscriptions only.
-- Events are read from consecutive versions, so `event_at` is when a sync first saw the change
-- (the change happened between that sync and the previous one), except `expired`.
-- Statuses are the treatments of subscription_versions.status: a status the spec does not show
-- acts as what `[analytics] status_map` maps it to (trialing = "active": a trialing
-- subscription renews, cancels and reactivates as an active one), else as 'other'.
-- `new`: the first version of a subscription (first listed).
-- `canceled`: status canceled where the previous version's was not (active, or other: a
--   past_due subscription that is then canceled was canceled then).
-- `reactivated`: status active where the previous version was canceled.
-- `renewed`: `expires_at` moved later while active (active before or after the change: a
--   subscription that renewed and then canceled between two syncs renewed while active). An
--   expiry that moves while 'other' is no renewal event (monthly_renewals still sees it).
-- `expired`: the latest version is canceled and its `expires_at` <= as_of; `event_at` is
--   `expires_at`. This is churn. A subscription that expired and came back is active now and
--   has no expired event: its churn was undone. An 'other' status never churns: one whose
--   `expires_at` passed is no longer usable, and not churn either (it may yet renew).
-- `is_initial_load`: `event_at` <= the first sync (as_of.first_sync_at): backfill describing the
--   past, not news. The first sync's `new` events and expiries before it are backfill.
-- `event_month`: the calendar month (its first instant) the event counts in, for every monthly
--   mart: the month of `event_at`, except that an `event_at` exactly at a month's first instant
--   (00:00:00 on the 1st) counts in the month before (month_spine): a sync then saw changes
--   made before it, and an expiry then ended a use that lasted through the month before
--   (usable means `expires_at` > t: the month before's base holds it, the next one's does
--   not). The first sync's observations (and earlier runs'), expiries aside, count in the
--   month they were made in: the history opens there.
--
-- @test unique(subscription_id, event_type, event_at)
-- @test not_null(subscription_id, event_type, event_at, is_initial_load, event_month)
-- @test accepted_values(event_type: new, canceled, reactivated, renewed, expired)

with first_listings as (
    -- each kind of event reads the versions itself: DuckDB copies a CTE read more than once
    select
        id,
        service_id,
        'new' as event_type,
        valid_from as event_at,
        expires_at,
        null::timestamp as previous_expires_at
    from analytics.subscription_versions
    where not is_test and version_number = 1
),

cancellations as (
    select
        id,
        service_id,
        'canceled' as event_type,
        valid_from as event_at,
        expires_at,
        previous_expires_at
    from analytics.subscription_versions
    where not is_test and status = 'canceled' and previous_status <> 'canceled'
),

reactivations as (
    select
        id,
        service_id,
        'reactivated' as event_type,
        valid_from as event_at,
        expires_at,
        previous_expires_at
    from analytics.subscription_versions
    where not is_test and status = 'active' and previous_status = 'canceled'
),

renewals as (
    select
        id,
        service_id,
        'renewed' as event_type,
        valid_from as event_at,
        expires_at,
        previous_expires_at
    from analytics.subscription_versions
    where
        not is_test
        and expires_at > previous_expires_at
        and (status = 'active' or previous_status = 'active')
),

expiries as (
    select
        live_versions.id,
        live_versions.service_id,
        'expired' as event_type,
        live_versions.expires_at as event_at,
        live_versions.expires_at,
        live_versions.previous_expires_at
    from analytics.subscription_versions as live_versions
    cross join analytics.as_of as clock
    where
        not live_versions.is_test
        and live_versions.is_last_version
        and live_versions.status = 'canceled'
        and live_versions.expires_at <= clock.as_of
),

all_events as (
    select * from first_listings
    union all
    select * from cancellations
    union all
    select * from reactivations
    union all
    select * from renewals
    union all
    select * from expiries
),

final as (
    select
        all_events.id as subscription_id,
        all_events.service_id,
        all_events.event_type,
        all_events.event_at,
        all_events.expires_at,
        all_events.previous_expires_at,
        all_events.event_at <= clock.first_sync_at as is_initial_load,
        date_trunc(
            'month',
            case
                when
                    all_events.event_type <> 'expired'
                    and all_events.event_at <= clock.first_sync_at
                    then all_events.event_at
                else all_events.event_at - interval 1 microsecond
            end
        ) as event_month
    from all_events
    cross join analytics.as_of as clock
)

select * from final
order by event_at, subscription_id, event_type
