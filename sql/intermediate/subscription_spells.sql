-- subscription_spells: when each live subscription was usable, as the syncs revealed it: one
-- definition of a subscription's use for every daily series (daily_subscribers, mrr_spells and
-- so mrr_changes, mrr_daily, mrr_movements), the monthly bases (month_start_subscribers) and
-- cohorts (cohort_retention), of its start (subscription_events' `new`) and of a lapse and
-- win-back for every mart that counts one (subscription_events' `expired` and `reactivated`,
-- and so monthly_churn, monthly_renewals, churn_by_platform, reactivations; mrr_changes).
--
-- Grain: one row per live subscription version that vouches for some use, (subscription_id,
-- version_number): the stretch [spell_start, spell_end) it was usable, consecutive versions'
-- stretches never overlapping.
-- A version vouches for the time from the sync that saw it (`seen_at`, its valid_from) until it
--   was replaced or its use ran out (subscription_versions.usable_until: its own `expires_at`,
--   or the next version's if later: an active subscription renews at its expiry), except:
-- * a start of use (`start_kind`) begins at `spell_start` = `started_at`, its first paid instant
--   as estimated below, not at the sync that first saw it;
-- * a version followed by a win-back ends at its own `expires_at`: the subscription lapsed
--   there, and was not usable until the win-back's `started_at`.
-- Starts of use (`start_kind`):
--   'new': the first version of a subscription first seen by a sync after the first one
--     (as_of.first_sync_at). The subscriptions the first sync listed are the history's base and
--     start where it starts, at the first sync, as before.
--   'win_back': a `reactivated` event (status active where the previous version was canceled,
--     subscription_events) that came after a lapse: the canceled version's `expires_at` E was
--     before the sync that saw the comeback, and either the sync before that one had seen it
--     expired (E <= `previous_sync_at`: still canceled then, not usable) or the new paid period
--     began after E (`expires_at` minus its period > E: a subscription saved before E renews at
--     E, to E plus its period); and the estimated comeback is after E and before the new
--     `expires_at`. Any other reactivation is a save: its use went on, it starts nothing.
--     This is the one definition of "lapsed and came back" (docs/analytics.md, "Win-backs").
-- The start's bounds: `latest_start` = `seen_at`, the sync that first saw it; `earliest_start` =
--   just after (1 microsecond) `previous_sync_at`, the latest sync before it that read the
--   subscription list (it was not there, or still lapsed, then: a window sync reads the rows
--   changed since the one before, so it would have read it), and for a win-back just after the
--   lapse (E) if that is later. Without an earlier sync, `earliest_start` = `latest_start`.
-- `started_at`, the estimate, moved into [earliest_start, latest_start] when it falls outside
--   (`start_basis`):
--   'period': the version's `expires_at` minus its billing period, when known (the period of
--     billing_segments' segment ending at that expiry: a monthly subscription started a month,
--     a yearly one a year, before its first expiry);
--   'estimate': the period unknown (no step between recorded expiries fits one yet): as if
--     monthly (`expires_at` minus a month) when that is not after `latest_start`, else as if
--     yearly (minus a year);
--   'bound': the figure above fell outside the bounds, moved to the nearest one;
--   'seen': no expiry or no earlier sync to estimate from: started when seen (a lifetime plan,
--     which has no expiry: subscription_versions.use_ends_at, usable until replaced or removed;
--     it comes back after a lapse as a win-back like any other).
-- `estimated_until`: the end of the part of the stretch that rests on an estimated start,
--   least(`spell_end`, `seen_at`), when `spell_start` < `seen_at` (else NULL): no sync had
--   seen the subscription (or its comeback) yet. daily_subscribers.estimated_usable and
--   mrr_daily.estimated_mrr count these parts.
-- `status_sent`, `status`, `service_id`: the version's (a backdated part has the status first
--   seen).
--
-- @test unique(subscription_id, version_number)
-- @test not_null(subscription_id, version_number, spell_start, spell_end, seen_at)
-- @test accepted_values(start_kind: new, win_back)
-- @test accepted_values(start_basis: period, estimate, bound, seen)

with clock as (
    select
        as_of,
        first_sync_at
    from analytics.as_of
),

sync_times as (
    -- the syncs that read the subscription list, up to as_of
    select distinct runs.observed_at
    from analytics.stg_sync_runs as runs
    cross join clock
    where runs.read_subscriptions and runs.observed_at <= clock.as_of
),

sync_windows as (
    -- each sync with the next one: a version first seen after a sync, up to and at the next,
    -- has that sync as the one before it (a few rows; no pass over the versions)
    select
        observed_at as previous_sync_at,
        lead(observed_at) over (order by observed_at) as next_sync_at
    from sync_times
),

start_candidates as (
    -- first listings after the first sync, and reactivations seen after the canceled version's
    -- expiry (the only ones that can follow a lapse)
    select
        versions.id,
        versions.version_number,
        versions.valid_from,
        versions.expires_at,
        versions.use_ends_at,
        versions.previous_expires_at,
        case when versions.version_number = 1 then 'new' else 'win_back' end as start_kind
    from analytics.subscription_versions as versions
    cross join clock
    where
        not versions.is_test
        and (
            (versions.version_number = 1 and versions.valid_from > clock.first_sync_at)
            or (
                versions.status = 'active'
                and versions.previous_status = 'canceled'
                and versions.previous_expires_at < versions.valid_from
            )
        )
),

bounded as (
    select
        candidates.*,
        sync_before.previous_sync_at,
        coalesce(
            case
                when candidates.start_kind = 'win_back'
                    then greatest(candidates.previous_expires_at, sync_before.previous_sync_at)
                else sync_before.previous_sync_at
            end + interval 1 microsecond,
            candidates.valid_from
        ) as earliest_start,
        candidates.valid_from as latest_start,
        case
            when candidates.expires_at is null then null
            when segments.period = 'yearly' then candidates.expires_at - interval 12 month
            when segments.period = 'monthly' then candidates.expires_at - interval 1 month
            when candidates.expires_at - interval 1 month <= candidates.valid_from
                then candidates.expires_at - interval 1 month
            else candidates.expires_at - interval 12 month
        end as computed_start,
        case
            when segments.period in ('monthly', 'yearly') then 'period'
            else 'estimate'
        end as computed_basis
    from start_candidates as candidates
    left join sync_windows as sync_before
        on sync_before.previous_sync_at < candidates.valid_from
        and (sync_before.next_sync_at is null or sync_before.next_sync_at >= candidates.valid_from)
    left join analytics.billing_segments as segments
        on segments.subscription_id = candidates.id
        and segments.segment_end = candidates.expires_at
),

estimated as (
    select
        *,
        case
            when computed_start is null then latest_start
            else least(greatest(computed_start, earliest_start), latest_start)
        end as started_at
    from bounded
),

starts as not materialized (
    -- the starts of use: every first listing after the first sync; the reactivations that
    -- came after a lapse (see the header), the rest are saves
    select
        id,
        version_number,
        start_kind,
        previous_sync_at,
        earliest_start,
        latest_start,
        started_at,
        case
            when computed_start is null or earliest_start = latest_start then 'seen'
            when computed_start < earliest_start or computed_start > latest_start then 'bound'
            else computed_basis
        end as start_basis
    from estimated
    where
        start_kind = 'new'
        or (
            (previous_expires_at <= previous_sync_at or computed_start > previous_expires_at)
            and started_at > previous_expires_at
            and use_ends_at > started_at
        )
),

ends as (
    -- where each version's use ends: a version followed by a win-back at its own expiry
    select
        versions.id,
        versions.version_number,
        versions.service_id,
        versions.status,
        versions.status_sent,
        versions.valid_from,
        versions.valid_to,
        case
            when next_starts.id is not null then versions.expires_at
            else versions.usable_until
        end as used_until
    from analytics.subscription_versions as versions
    left join starts as next_starts
        on next_starts.id = versions.id
        and next_starts.version_number = versions.version_number + 1
        and next_starts.start_kind = 'win_back'
    where not versions.is_test
),

spells as (
    select
        ends.id as subscription_id,
        ends.version_number,
        ends.service_id,
        ends.status,
        ends.status_sent,
        ends.valid_from as seen_at,
        coalesce(starts.started_at, ends.valid_from) as spell_start,
        case
            when ends.valid_to is null then ends.used_until
            else least(ends.valid_to, ends.used_until)
        end as spell_end,
        starts.start_kind,
        starts.start_basis,
        starts.previous_sync_at,
        starts.earliest_start,
        starts.latest_start
    from ends
    left join starts
        on starts.id = ends.id
        and starts.version_number = ends.version_number
),

final as (
    select
        subscription_id,
        version_number,
        service_id,
        status,
        status_sent,
        seen_at,
        spell_start,
        spell_end,
        case when spell_start < seen_at then least(spell_end, seen_at) end as estimated_until,
        start_kind,
        start_basis,
        previous_sync_at,
        earliest_start,
        latest_start
    from spells
    where spell_end > spell_start
)

select * from final
order by subscription_id, version_number
