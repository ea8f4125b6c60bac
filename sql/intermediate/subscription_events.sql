-- subscription_events: what happened to live subscriptions, as the syncs observed it.
--
-- Grain: one row per (subscription_id, event_type, event_at). Live subscriptions only.
-- Events are read from consecutive versions, so `event_at` is when a sync first saw the change
-- (the change happened between that sync and the previous one), except a start of use (`new`
-- after the first sync, a win-back's `reactivated`), dated when it began, and `expired`, at
-- `expires_at`. The lapse-and-comeback rule and the dating of starts are written once, in
-- subscription_spells (docs/analytics.md "Win-backs", "Starts between syncs"); every mart that
-- counts an event reads it from here, so a subscription that lapsed and came back is counted
-- the same way by monthly_churn, monthly_renewals, churn_by_platform, reactivations and
-- mrr_changes / mrr_movements: churned at its expiry, won back at its comeback.
-- Statuses are the treatments of subscription_versions.status: a status the spec does not show
-- acts as what `[analytics] status_map` maps it to (trialing = "active": a trialing
-- subscription renews, cancels and reactivates as an active one), else as 'other'.
-- `new`: the first version of a subscription (first listed). A subscription first seen by a
--   sync after the first one is new at its estimated first paid instant
--   (subscription_spells.spell_start of its 'new' start: its first `expires_at` minus its
--   period, within (the sync before, the sync that saw it]), the instant mrr_changes has its
--   'new' movement at and daily_subscribers counts it from; without such a start (no use to
--   date it by: first seen already past an expiry before the sync before) at the sync that saw
--   it. The first sync's subscriptions are new at the first sync (backfill).
-- `canceled`: status canceled where the previous version's was not (active, or other: a
--   past_due subscription that is then canceled was canceled then).
-- `reactivated`: status active where the previous version was canceled. `is_win_back`: it came
--   after a lapse (subscription_spells.start_kind 'win_back': the canceled version's
--   `expires_at` passed and the subscription was not usable until it came back; the one
--   definition, docs/analytics.md "Win-backs"); its `event_at` is then the estimated comeback
--   (subscription_spells.spell_start: the new `expires_at` minus its period, between the
--   expiry or the sync before the one that saw it, whichever is later, and that sync), the
--   time mrr_changes has its 'reactivated' movement at. Otherwise it is a save (changed their
--   mind before the paid period ran out, or a late-seen save whose new paid period runs on
--   from the old one: no use was lost) at the sync that saw it.
-- `renewed`: `expires_at` moved later while active (active before or after the change: a
--   subscription that renewed and then canceled between two syncs renewed while active). An
--   expiry that moves while 'other' is no renewal event (monthly_renewals still sees it).
-- `expired`: a lapse, at `expires_at` <= as_of: a canceled version whose use ran out, either
--   the latest version (the subscription is gone) or the version before a win-back (it lapsed
--   there and came back later: one churn at the expiry, then one win-back at the comeback, as
--   ChartMogul counts it and as mrr_changes has a 'churned' then a 'reactivated' movement).
--   This is churn. A save (reactivated before the expiry, or seen late with its paid periods
--   contiguous) is no lapse and no churn. An 'other' status never churns: one whose
--   `expires_at` passed is no longer usable, and not churn either (it may yet renew).
-- `seen_at`: the sync whose version shows the event (valid_from): `event_at` but for `expired`
--   (the sync that saw the canceled version), a win-back (the sync that saw it back) and a
--   `new` dated at its start (the sync that first saw it).
-- `is_initial_load`: `event_at` <= the first sync (as_of.first_sync_at): backfill describing the
--   past, not news. The first sync's `new` events and expiries before it are backfill (a `new`
--   after the first sync starts after it: its start is bounded by the sync before).
-- `event_month`: the calendar month (its first instant) the event counts in, for every monthly
--   mart: the month of `event_at`, except that an `event_at` exactly at a month's first instant
--   (00:00:00 on the 1st) counts in the month before (month_spine): a sync then saw changes
--   made before it, a start then is in the next month's base (usable from that instant) and
--   new in the month before, and an expiry then ended a use that lasted through the month
--   before (usable means `expires_at` > t: the month before's base holds it, the next one's
--   does not). The first sync's observations (and earlier runs'), expiries aside, count in the
--   month they were made in: the history opens there.
--
-- @test unique(subscription_id, event_type, event_at)
-- @test not_null(subscription_id, event_type, event_at, is_initial_load, event_month)
-- @test not_null(seen_at, is_win_back)
-- @test accepted_values(event_type: new, canceled, reactivated, renewed, expired)

with first_listings as (
    -- each kind of event reads the versions itself: DuckDB copies a CTE read more than once
    select
        versions.id,
        versions.service_id,
        'new' as event_type,
        coalesce(starts.spell_start, versions.valid_from) as event_at,
        versions.expires_at,
        null::timestamp as previous_expires_at,
        versions.valid_from as seen_at,
        false as is_win_back
    from analytics.subscription_versions as versions
    left join analytics.subscription_spells as starts
        on starts.subscription_id = versions.id
        and starts.version_number = versions.version_number
        and starts.start_kind = 'new'
    where not versions.is_test and versions.version_number = 1
),

cancellations as (
    select
        id,
        service_id,
        'canceled' as event_type,
        valid_from as event_at,
        expires_at,
        previous_expires_at,
        valid_from as seen_at,
        false as is_win_back
    from analytics.subscription_versions
    where not is_test and status = 'canceled' and previous_status <> 'canceled'
),

reactivations as (
    select
        versions.id,
        versions.service_id,
        'reactivated' as event_type,
        coalesce(win_backs.spell_start, versions.valid_from) as event_at,
        versions.expires_at,
        versions.previous_expires_at,
        versions.valid_from as seen_at,
        win_backs.subscription_id is not null as is_win_back
    from analytics.subscription_versions as versions
    left join analytics.subscription_spells as win_backs
        on win_backs.subscription_id = versions.id
        and win_backs.version_number = versions.version_number
        and win_backs.start_kind = 'win_back'
    where
        not versions.is_test
        and versions.status = 'active'
        and versions.previous_status = 'canceled'
),

renewals as (
    select
        id,
        service_id,
        'renewed' as event_type,
        valid_from as event_at,
        expires_at,
        previous_expires_at,
        valid_from as seen_at,
        false as is_win_back
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
        live_versions.previous_expires_at,
        live_versions.valid_from as seen_at,
        false as is_win_back
    from analytics.subscription_versions as live_versions
    cross join analytics.as_of as clock
    left join analytics.subscription_spells as win_backs
        on win_backs.subscription_id = live_versions.id
        and win_backs.version_number = live_versions.version_number + 1
        and win_backs.start_kind = 'win_back'
    where
        not live_versions.is_test
        and (live_versions.is_last_version or win_backs.subscription_id is not null)
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
        all_events.seen_at,
        all_events.is_win_back,
        all_events.event_at <= (select first_sync_at from analytics.as_of) as is_initial_load,
        date_trunc(
            'month',
            case
                when
                    all_events.event_type <> 'expired'
                    and all_events.event_at <= (select first_sync_at from analytics.as_of)
                    then all_events.event_at
                else all_events.event_at - interval 1 microsecond
            end
        ) as event_month
    -- the first sync as a scalar, not a join per event (PostgreSQL then plans it in parallel)
    from all_events
)

select * from final
order by event_at, subscription_id, event_type
